package web

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// rpcGate stands in front of vanguard for every RPC of the grpc.Server: it
// authenticates the caller, then reads the request's one message whole
// and checks it (framing, compression, encoding, size, timeouts), and
// answers anything wrong itself, before vanguard sees the request.
//
// Why: vanguard reads a request's body on the goroutine grpc-go's
// ServeHTTP reads it on, and when that body is malformed it ends the
// response from there (responseWriter.reportError), while the handler's
// goroutine writes the same response. Both write one header map: a
// "concurrent map writes", which no recover catches, stopped the whole
// process, gRPC port included, a few thousand malformed requests into a
// flood. A request that passes the gate decodes, so vanguard's reader
// never fails and never writes.
//
// Methods whose requests are streams (reflection's bidi stream) cannot be
// read whole first: they pass only as gRPC with proto messages, which
// vanguard hands to grpc-go untouched, without its reader.
type rpcGate struct {
	methods map[string]gateMethod
	// limit is the most bytes one message may take, before and after
	// decompression.
	limit int
	// authenticate, when not nil, refuses a request without valid
	// credentials before its body is read; nil means no authentication.
	authenticate func(*http.Request) error
	// bodyTimeout bounds the time a body may take to arrive; zero means
	// no bound.
	bodyTimeout time.Duration
	json        jsonCodec
	errs        *connect.ErrorWriter
	next, other http.Handler
}

// gateMethod is what the rpcGate knows of one method.
type gateMethod struct {
	input           protoreflect.MessageType
	streamsRequests bool
}

// newGate returns the gate of gs's methods, sending what passes to next
// and any path that is not one of them to other.
func newGate(gs *grpc.Server, limit int, authenticate func(*http.Request) error, next, other http.Handler) (*rpcGate, error) {
	g := &rpcGate{
		methods:      map[string]gateMethod{},
		limit:        limit,
		authenticate: authenticate,
		json:         jsonCodec{vanguard.NewJSONCodec(protoregistry.GlobalTypes)},
		errs:         connect.NewErrorWriter(),
		next:         next,
		other:        other,
	}
	for name, info := range gs.GetServiceInfo() {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			return nil, fmt.Errorf("web: service %s: %w", name, err)
		}
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if !ok {
			return nil, fmt.Errorf("web: %s is not a service", name)
		}
		for _, m := range info.Methods {
			md := sd.Methods().ByName(protoreflect.Name(m.Name))
			if md == nil {
				return nil, fmt.Errorf("web: method %s/%s has no descriptor", name, m.Name)
			}
			in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
			if err != nil {
				return nil, fmt.Errorf("web: input of %s/%s: %w", name, m.Name, err)
			}
			g.methods["/"+name+"/"+m.Name] = gateMethod{input: in, streamsRequests: m.IsClientStream}
		}
	}
	return g, nil
}

// wire is how a request's messages travel: its protocol, codec and
// compression.
type wire struct {
	protocol    string // protoConnect, protoConnectStream, protoGRPC or protoGRPCWeb
	codec       string // "proto" or "json"
	compression string // "" or "gzip"
}

const (
	protoConnect       = "Connect"
	protoConnectStream = "Connect streaming"
	protoGRPC          = "gRPC"
	protoGRPCWeb       = "gRPC-Web"
)

func (w wire) enveloped() bool { return w.protocol != protoConnect }

// compressionHeader is the header that names the compression of w's
// messages.
func (w wire) compressionHeader() string {
	switch w.protocol {
	case protoConnect:
		return "Content-Encoding"
	case protoConnectStream:
		return "Connect-Content-Encoding"
	}
	return "Grpc-Encoding"
}

func (g *rpcGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m, ok := g.methods[r.URL.Path]
	if !ok {
		// The console, and answers for RPCs no service has. Nothing else
		// reaches vanguard: the REST routes it would derive from
		// google.api.http options (A2A's, at the root) are not served;
		// A2A's REST binding is under /a2a/.
		g.other.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "an RPC is a POST", http.StatusMethodNotAllowed)
		return
	}
	wr, status, err := classify(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if g.authenticate != nil {
		if err := g.authenticate(r); err != nil {
			stopReading(w, r) // not a byte of the body of a caller unknown
			g.refuse(w, r, connect.NewError(connect.CodeUnauthenticated, err))
			return
		}
	}
	if err := checkHeaders(r.Header, wr); err != nil {
		g.refuse(w, r, err)
		return
	}
	if m.streamsRequests {
		if wr.protocol != protoGRPC || wr.codec != "proto" {
			// The caller's choice of protocol, so a 4xx (Unimplemented
			// would be a 501 over Connect).
			g.refuse(w, r, connect.NewError(connect.CodeInvalidArgument,
				fmt.Errorf("%s streams its requests: on this listener it takes gRPC with proto messages (application/grpc), not %s with %s", r.URL.Path, wr.protocol, wr.codec)))
			return
		}
		g.next.ServeHTTP(w, r)
		return
	}
	body, err := g.readMessage(w, r, wr, m.input)
	if err != nil {
		g.refuse(w, r, err)
		return
	}
	// What vanguard reads is the checked message, uncompressed.
	if wr.compression != "" {
		r.Header.Del(wr.compressionHeader())
	}
	if wr.protocol == protoConnect || wr.protocol == protoConnectStream {
		// Not Connect's header: vanguard would pass it on to grpc-go as
		// the compression of a message that has none.
		r.Header.Del("Grpc-Encoding")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	g.next.ServeHTTP(w, r)
}

// refuse answers err in the request's protocol. What is left of the body
// is not read here: net/http discards a little of it to keep the
// connection, and closes the connection when there is more (a body not
// yet sent, or too slow, holds nothing).
func (g *rpcGate) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		ce = connect.NewError(connect.CodeInvalidArgument, err)
	}
	_ = g.errs.Write(w, r, ce)
}

// classify tells a request's wire from its headers, as vanguard would,
// and refuses (with an HTTP status) what vanguard would not serve.
func classify(r *http.Request) (wire, int, error) {
	cts := r.Header.Values("Content-Type")
	if len(cts) != 1 {
		return wire{}, http.StatusUnsupportedMediaType, errors.New("an RPC needs exactly one Content-Type: application/grpc, application/grpc-web, application/connect+proto or +json, application/proto or application/json")
	}
	// A media type and its parameters (a charset), compared without
	// case; parsed by hand, since mime.ParseMediaType allocates a map on
	// every call.
	mt, _, _ := strings.Cut(cts[0], ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	var wr wire
	switch {
	case mt == "application/grpc" || mt == "application/grpc+proto":
		wr = wire{protocol: protoGRPC, codec: "proto"}
	case mt == "application/grpc+json":
		wr = wire{protocol: protoGRPC, codec: "json"}
	case mt == "application/grpc-web" || mt == "application/grpc-web+proto":
		wr = wire{protocol: protoGRPCWeb, codec: "proto"}
	case mt == "application/grpc-web+json":
		wr = wire{protocol: protoGRPCWeb, codec: "json"}
	case mt == "application/connect+proto":
		wr = wire{protocol: protoConnectStream, codec: "proto"}
	case mt == "application/connect+json":
		wr = wire{protocol: protoConnectStream, codec: "json"}
	case mt == "application/proto":
		wr = wire{protocol: protoConnect, codec: "proto"}
	case mt == "application/json":
		wr = wire{protocol: protoConnect, codec: "json"}
	default:
		return wire{}, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q is not one this server takes: application/grpc, application/grpc-web, application/connect+proto or +json, application/proto or application/json", cts[0])
	}
	if wr.protocol == protoGRPC && r.ProtoMajor != 2 {
		// The client's mistake, so a 4xx rather than vanguard's 505.
		return wire{}, http.StatusBadRequest, errors.New("gRPC needs HTTP/2 (h2c, or TLS with ALPN h2); over HTTP/1.1 use gRPC-Web or Connect")
	}
	if wr.protocol == protoConnect && r.Header.Get("Connect-Protocol-Version") != "1" {
		return wire{}, http.StatusBadRequest, errors.New("a Connect unary call needs Connect-Protocol-Version: 1")
	}
	if wr.enveloped() {
		if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
			return wire{}, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q: %s compresses each message (%s), not the body", enc, wr.protocol, wr.compressionHeader())
		}
	}
	switch enc := r.Header.Get(wr.compressionHeader()); enc {
	case "", "identity":
	case "gzip":
		wr.compression = "gzip"
	default:
		// Answered in the request's protocol by checkHeaders.
		wr.compression = enc
	}
	return wr, 0, nil
}

// checkHeaders refuses a compression the server does not have, and a
// timeout header that does not parse (grpc-go answered a malformed
// Grpc-Timeout with Internal), as InvalidArgument: the caller's
// mistakes, never a 5xx (Unimplemented is 501 over Connect).
func checkHeaders(h http.Header, wr wire) error {
	if wr.compression != "" && wr.compression != "gzip" {
		return fmt.Errorf("%s %q is not supported: use gzip or identity", wr.compressionHeader(), wr.compression)
	}
	if v := h.Values("Grpc-Timeout"); len(v) > 0 {
		if len(v) > 1 || !validGRPCTimeout(v[0]) {
			return fmt.Errorf("Grpc-Timeout %q is not a timeout: 1 to 8 digits and a unit, one of H M S m u n", strings.Join(v, ","))
		}
	}
	if v := h.Values("Connect-Timeout-Ms"); len(v) > 0 {
		if len(v) > 1 || len(v[0]) == 0 || len(v[0]) > 10 || strings.Trim(v[0], "0123456789") != "" {
			return fmt.Errorf("Connect-Timeout-Ms %q is not a timeout: 1 to 10 digits of milliseconds", strings.Join(v, ","))
		}
	}
	return nil
}

// validGRPCTimeout reports whether v is a gRPC timeout: at most 8 ASCII
// digits and a unit.
func validGRPCTimeout(v string) bool {
	if len(v) < 2 || len(v) > 9 || !strings.ContainsRune("HMSmun", rune(v[len(v)-1])) {
		return false
	}
	return strings.Trim(v[:len(v)-1], "0123456789") == ""
}

// readMessage reads the body of a request whose method takes one
// message, checks it, and returns the body vanguard is to read: the same
// framing, the message uncompressed.
func (g *rpcGate) readMessage(w http.ResponseWriter, r *http.Request, wr wire, in protoreflect.MessageType) ([]byte, error) {
	// An envelope's 5 bytes on top of a message; a compressed message
	// is no larger than the limit either.
	raw, err := readWithin(w, r, int64(g.limit)+5, g.bodyTimeout)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the request is larger than the %d bytes a message may take", g.limit))
	case errors.As(err, &ne) && ne.Timeout():
		return nil, connect.NewError(connect.CodeCanceled, fmt.Errorf("the request's body did not arrive within %v (--http-body-timeout)", g.bodyTimeout))
	case err != nil:
		// Cut short: the caller's failure, not the server's.
		return nil, connect.NewError(connect.CodeCanceled, fmt.Errorf("reading the request: %w", err))
	}
	msg, compressed := raw, wr.compression != ""
	if wr.enveloped() {
		if msg, compressed, err = oneEnvelope(raw, wr); err != nil {
			return nil, err
		}
	}
	if compressed {
		if msg, err = gunzip(msg, g.limit); err != nil {
			return nil, err
		}
	}
	if err := g.decode(msg, wr, in); err != nil {
		return nil, err
	}
	switch {
	case !wr.enveloped():
		return msg, nil
	case !compressed:
		return raw, nil // the one envelope, as it came
	}
	out := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...), nil
}

// oneEnvelope returns the one message of an enveloped request body, and
// whether its envelope says it is compressed.
func oneEnvelope(body []byte, wr wire) ([]byte, bool, error) {
	if len(body) == 0 {
		return nil, false, fmt.Errorf("the request has no message: %s sends one enveloped message", wr.protocol)
	}
	if len(body) < 5 {
		return nil, false, fmt.Errorf("the request ends inside an envelope's 5-byte prefix (%d bytes)", len(body))
	}
	flags, n := body[0], binary.BigEndian.Uint32(body[1:5])
	if flags > 1 {
		return nil, false, fmt.Errorf("envelope flags %#02x: a request message's flags are 0, or 1 when compressed", flags)
	}
	if flags == 1 && wr.compression == "" {
		return nil, false, fmt.Errorf("the message is marked compressed but %s names no compression", wr.compressionHeader())
	}
	rest := body[5:]
	if uint64(n) > uint64(len(rest)) {
		return nil, false, fmt.Errorf("the envelope announces %d bytes and %d follow", n, len(rest))
	}
	if len(rest) > int(n) {
		return nil, false, fmt.Errorf("%d bytes follow the request's message: this method takes exactly one", len(rest)-int(n))
	}
	return rest, flags == 1, nil
}

// gunzip decompresses msg, refusing more than limit bytes out.
func gunzip(msg []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(msg))
	if err != nil {
		return nil, fmt.Errorf("the message is not gzip: %v", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("the message is not valid gzip: %v", err)
	}
	if len(out) > limit {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the message is larger than %d bytes once decompressed", limit))
	}
	return out, nil
}

// decode checks that msg decodes as the method's request in wr's codec,
// as vanguard and grpc-go will decode it.
func (g *rpcGate) decode(msg []byte, wr wire, in protoreflect.MessageType) error {
	m := in.New().Interface()
	if wr.codec == "proto" {
		if err := proto.Unmarshal(msg, m); err != nil {
			return fmt.Errorf("the request could not be decoded: %s", strings.TrimPrefix(err.Error(), "proto: "))
		}
		return nil
	}
	if len(bytes.TrimSpace(msg)) == 0 {
		return errors.New("the request has no message: a JSON request is an object, {} at the least")
	}
	if err := g.json.Unmarshal(msg, m); err != nil {
		return err
	}
	// vanguard re-encodes it as proto for grpc-go, under the same limit.
	if n := proto.Size(m); n > g.limit {
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the request is %d bytes as proto, more than the %d a message may take", n, g.limit))
	}
	return nil
}
