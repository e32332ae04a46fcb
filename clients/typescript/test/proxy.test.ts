/** What the client honours behind a company proxy (docs/reference/clients.md#proxies-and-ca-bundles): it sends with
 * Node's fetch, which goes through HTTPS_PROXY (a CONNECT tunnel) and skips the hosts NO_PROXY lists only with
 * NODE_USE_ENV_PROXY=1, and trusts the CAs of NODE_EXTRA_CA_CERTS. Each case runs the built client in a new Node
 * (those variables are read at start) against an https stub signed by a CA made here (openssl) and a real CONNECT
 * proxy on loopback. */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { REPO } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "tickets-proxy-"));
const tunnels: string[] = [];
let stub: Server;
let proxy: Server;
let url = "";

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
}

before(async () => {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Tickets test CA", "-days", "1");
  openssl("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost");
  writeFileSync(join(dir, "san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
    "-extfile", "san.ext", "-out", "server.pem");
  const tls = { key: readFileSync(join(dir, "server.key")), cert: readFileSync(join(dir, "server.pem")) };
  stub = createHttpsServer(tls, (_, response) => {
    response.setHeader("Content-Type", "application/json");
    response.end(JSON.stringify({ key: "orders", ticket: 7 }));
  });
  proxy = createServer((_, response) => response.writeHead(405).end());
  proxy.on("connect", (request, client, head) => {
    tunnels.push(`CONNECT ${request.url}`);
    const [host, port] = (request.url ?? "").split(":");
    const upstream = connect(Number(port), host, () => {
      client.write("HTTP/1.1 200 Connection established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  for (const server of [stub, proxy]) await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `https://localhost:${(stub.address() as AddressInfo).port}`;
});

after(() => {
  stub.closeAllConnections();
  proxy.closeAllConnections();
  stub.close();
  proxy.close();
});

/** The built client's next("orders") in a new Node with `env` (and none of the proxy variables of this one). */
async function nextInNewNode(env: Record<string, string>): Promise<string> {
  const client = join(REPO, "clients", "typescript", "dist", "src", "index.js");
  const script = `import { TicketsClient } from ${JSON.stringify(client)};
    new TicketsClient(${JSON.stringify(url)}, { maxAttempts: 1 }).next("orders")
      .then((tickets) => console.log(JSON.stringify(tickets)), (error) => console.log(error.code));`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/proxy|ca_certs/i.test(name)));
  const ran = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...clean, ...env },
    timeout: 30_000,
  }); // not execFileSync: the servers answer from this process's event loop
  return ran.stdout.trim();
}

test("HTTPS_PROXY with NODE_USE_ENV_PROXY=1: a CONNECT tunnel, the CA from NODE_EXTRA_CA_CERTS", async () => {
  tunnels.length = 0;
  const proxied = { HTTPS_PROXY: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` };
  const ca = { NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") };
  assert.equal(await nextInNewNode({ ...proxied, ...ca, NODE_USE_ENV_PROXY: "1" }), "[7]");
  assert.deepEqual(tunnels, [`CONNECT ${new URL(url).host}`]);
  assert.equal(await nextInNewNode({ ...proxied, ...ca, NODE_USE_ENV_PROXY: "1", NO_PROXY: "localhost" }), "[7]");
  assert.equal(await nextInNewNode({ ...proxied, ...ca }), "[7]"); // without NODE_USE_ENV_PROXY: straight to the server
  assert.equal(tunnels.length, 1);
  assert.equal(await nextInNewNode({ ...proxied, NODE_USE_ENV_PROXY: "1" }), "unreachable"); // no CA: TLS refused
});
