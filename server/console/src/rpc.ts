// "Copy as RPC": every view and action can show the same call as a grpcurl
// command and as Go, Python and TypeScript using the generated clients, so
// what one clicked is one paste away from a script.
import { create, toJson, type DescMessage, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { baseUrl, token } from "./api.js";
import { h, replace } from "./dom.js";

type Call = { service: DescService; method: string; input: DescMessage; req: unknown };

// grpcAddr is where a gRPC client reaches this server. The HTTP listener
// speaks gRPC too (h2c, or h2 over TLS), but only at the root: with a
// --http-prefix a gRPC client cannot follow, so the gRPC port's usual
// address stands in.
export function grpcAddr(): { addr: string; plaintext: boolean; known: boolean } {
  const u = new URL(baseUrl + "/");
  if (u.pathname !== "/") return { addr: "localhost:50051", plaintext: true, known: false };
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return { addr: `${u.hostname}:${port}`, plaintext: u.protocol === "http:", known: true };
}

function shq(s: string): string {
  return "'" + s.replace(/'/g, `'\\''`) + "'";
}

// goString is s as a Go string literal: raw (backquoted) when it holds no
// backquote, else interpreted, in JSON's escapes, which Go reads the same.
function goString(s: string): string {
  return s.includes("`") ? JSON.stringify(s) : "`" + s + "`";
}

export function snippets(c: Call): Record<string, string> {
  const m = c.service.methods.find((x) => x.localName === c.method || x.name === c.method);
  if (!m) throw new Error(`no method ${c.method}`);
  const body = JSON.stringify(toJson(c.input, create(c.input, c.req as MessageInitShape<DescMessage>)));
  const { addr, plaintext } = grpcAddr();
  const full = `${c.service.typeName}/${m.name}`;
  const auth = token() ? ` -H "authorization: Bearer $AGENTRUNNER_TOKEN"` : "";
  const grpcurl = `grpcurl${plaintext ? " -plaintext" : ""}${auth} -d ${shq(body)} ${addr} ${full}`;
  const svc = c.service.name;
  const file = c.service.file.name; // agentrunner/service/v1/runner_service
  const py = file.replace(/\//g, ".");
  const pyMod = py.split(".").pop()!;
  const pyPkg = py.split(".").slice(0, -1).join(".");
  const stream = m.methodKind === "server_streaming";
  const go = [
    `import servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"`,
    ``,
    `conn, _ := grpc.NewClient(${JSON.stringify(addr)}, grpc.WithTransportCredentials(insecure.NewCredentials()))`,
    `client := servicev1.New${svc}Client(conn)`,
    `req := &servicev1.${m.input.name}{}`,
    `if err := protojson.Unmarshal([]byte(${goString(body)}), req); err != nil { return err }`,
    stream
      ? `stream, err := client.${m.name}(ctx, req)\nfor { resp, err := stream.Recv(); if err != nil { break }; fmt.Println(resp) }`
      : `resp, err := client.${m.name}(ctx, req)`,
  ].join("\n");
  const python = [
    `import grpc`,
    `from google.protobuf import json_format`,
    `from ${pyPkg} import ${pyMod}_pb2, ${pyMod}_pb2_grpc`,
    ``,
    `stub = ${pyMod}_pb2_grpc.${svc}Stub(grpc.insecure_channel(${JSON.stringify(addr)}))`,
    `req = json_format.Parse(${/['\\]/.test(body) ? JSON.stringify(body) : `'${body}'`}, ${pyMod}_pb2.${m.input.name}())`,
    stream ? `for resp in stub.${m.name}(req):\n    print(resp)` : `print(stub.${m.name}(req))`,
  ].join("\n");
  const ts = [
    `import { createClient } from "@connectrpc/connect";`,
    `import { createConnectTransport } from "@connectrpc/connect-web";`,
    `import { fromJson } from "@bufbuild/protobuf";`,
    `import { ${svc}, ${m.input.name}Schema } from "./gen/ts/${file}_pb.js";`,
    ``,
    `const client = createClient(${svc}, createConnectTransport({ baseUrl: ${JSON.stringify(baseUrl)} }));`,
    `const req = fromJson(${m.input.name}Schema, ${body});`,
    stream ? `for await (const resp of client.${m.localName}(req)) console.log(resp);` : `console.log(await client.${m.localName}(req));`,
  ].join("\n");
  return { grpcurl, go, python, typescript: ts };
}

// rpcButton returns a "Copy as RPC" button for the call req() describes
// when it is clicked (so it reflects the view's current inputs).
export function rpcButton(service: DescService, method: string, input: DescMessage, req: () => unknown, label = "Copy as RPC"): HTMLElement {
  return h("button.rpc", { type: "button", title: "The same call as grpcurl, Go, Python and TypeScript", onclick: () => showRPC({ service, method, input, req: req() }) }, label);
}

async function copy(text: string): Promise<void> {
  // The last copied text is also on the page, for those (and tests)
  // without clipboard access.
  const sink = document.getElementById("clipboard");
  if (sink) sink.textContent = text;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    /* no clipboard permission: the text is on the page */
  }
}

function showRPC(c: Call): void {
  const s = snippets(c);
  const panel = document.getElementById("rpc-panel")!;
  const { known } = grpcAddr();
  replace(
    panel,
    h(
      "div.rpc-box",
      h("div.row", h("h3", `${c.service.name}.${c.service.methods.find((x) => x.localName === c.method)?.name ?? c.method}`), h("span.grow"), h("button", { type: "button", onclick: () => panel.classList.remove("open") }, "Close")),
      known ? null : h("p.hint", "This page is served under a path prefix, which gRPC clients cannot use: replace localhost:50051 with the server's --addr."),
      Object.entries(s).map(([lang, text]) =>
        h("div.snippet", h("div.row", h("b", lang), h("span.grow"), h("button", { type: "button", id: `copy-${lang}`, onclick: () => copy(text) }, "Copy")), h("pre", { id: `rpc-${lang}` }, text)),
      ),
    ),
  );
  panel.classList.add("open");
  void copy(s.grpcurl);
}
