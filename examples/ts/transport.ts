// transport makes the gRPC transport of the examples from their flags:
// plaintext by default; TLS when --ca-file or --cert-file is given (mTLS
// with --cert-file and --key-file); a bearer token from --token-file, or
// the AGENTRUNNER_TOKEN environment variable, sent with every call as
// "authorization: Bearer <token>".
import { readFileSync } from "node:fs";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

export function transport(addr: string, flags: Map<string, string>): Transport {
  const caFile = flags.get("ca-file");
  const certFile = flags.get("cert-file");
  const keyFile = flags.get("key-file");
  const tokenFile = flags.get("token-file");
  const token = tokenFile ? readFileSync(tokenFile, "utf8").replace(/[\r\n]+$/, "") : (process.env.AGENTRUNNER_TOKEN ?? "");
  const tls = caFile !== undefined || certFile !== undefined;
  const bearer: Interceptor = (next) => async (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  return createGrpcTransport({
    baseUrl: `${tls ? "https" : "http"}://${addr}`,
    interceptors: token ? [bearer] : [],
    nodeOptions: tls
      ? {
          ca: caFile ? readFileSync(caFile) : undefined,
          cert: certFile ? readFileSync(certFile) : undefined,
          key: keyFile ? readFileSync(keyFile) : undefined,
        }
      : undefined,
  });
}
