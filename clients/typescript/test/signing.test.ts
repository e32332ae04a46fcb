/** SigV4, checked offline: a request to a Function URL goes (through the client's `fetch` option) to a
 * stub server on 127.0.0.1 that records it, and the test recomputes its signature from the SigV4
 * specification with node:crypto, independently of the SDK's signer the client uses. */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { after, afterEach, before, describe, test } from "node:test";

import { TicketsClient, TicketsError, functionUrlRegion } from "../src/index.js";
import { type Recorded, StubServer, jsonReply } from "./support.js";

const FUNCTION_URL = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws";
const FAKE_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
  AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  AWS_SESSION_TOKEN: "FwoGZXIvYXdzEXAMPLETOKEN",
};
const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/(\d{8})\/eu-west-1\/lambda\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;
// What the credential chain reads besides the environment: pointed away, so only the fake ones count.
const CHAIN_SETTINGS = ["AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_EC2_METADATA_DISABLED"];

/** The signature a SigV4 verifier (AWS) computes for a received request, from the specification.
 * `host` is the Function URL's: the request reached the stub server under another. */
function expectedSignature(request: Recorded, host: string, secretKey: string): string {
  const headers: Record<string, string> = { ...request.headers, host };
  const authorization = headers.authorization as string;
  const [, date, region, service] = (/Credential=[^/]+\/(\d{8})\/([^/]+)\/([^/]+)\//.exec(authorization) ?? []) as string[];
  const signed = (/SignedHeaders=([^,]+)/.exec(authorization)?.[1] ?? "").split(";");
  const [path = "", rawQuery = ""] = request.path.split("?");
  const rfc3986 = (text: string) => encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const query = rawQuery
    .split("&")
    .filter(Boolean)
    .map((pair) => pair.split("=").map((part) => rfc3986(decodeURIComponent(part ?? ""))).join("="))
    .sort()
    .join("&");
  const canonicalPath = path.split("/").map((segment) => rfc3986(decodeURIComponent(segment))).join("/");
  const canonicalHeaders = signed.map((name) => `${name}:${(headers[name] ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
  const canonicalRequest = [request.method, canonicalPath, query, canonicalHeaders, signed.join(";"), sha256("")].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", headers["x-amz-date"], scope, sha256(canonicalRequest)].join("\n");
  let key: Buffer = createHmac("sha256", `AWS4${secretKey}`).update(date as string).digest();
  for (const part of [region, service, "aws4_request"]) key = createHmac("sha256", key).update(part as string).digest();
  return createHmac("sha256", key).update(stringToSign).digest("hex");
}

describe("signing", () => {
  let stub: StubServer;
  const saved = { ...process.env };
  before(async () => {
    stub = await StubServer.start([jsonReply(200, { key: "orders", ticket: 1, tickets: [1, 2] })]);
  });
  after(async () => stub.stop());
  afterEach(() => {
    for (const name of [...Object.keys(FAKE_CREDENTIALS), ...CHAIN_SETTINGS]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  /** A fetch that sends the client's request to the stub server instead of AWS. */
  function toStub(url: string | URL | Request, init?: RequestInit): Promise<Response> {
    const target = new URL(url instanceof Request ? url.url : url);
    return fetch(stub.url + target.pathname + target.search, init);
  }

  test("Function URLs are signed and other URLs are not", () => {
    assert.equal(functionUrlRegion(new URL(FUNCTION_URL).hostname), "eu-west-1");
    assert.ok(new TicketsClient(FUNCTION_URL).signing);
    assert.ok(!new TicketsClient("http://127.0.0.1:8000").signing);
    assert.ok(!new TicketsClient("https://tickets.example.com").signing);
    assert.ok(new TicketsClient("https://tickets.example.com", { sign: true, region: "us-east-1" }).signing);
    assert.throws(() => new TicketsClient("https://tickets.example.com", { sign: true }), /region/);
  });

  test("with fixed credentials from the chain, a request is SigV4 for lambda in the Function URL's region", async () => {
    Object.assign(process.env, FAKE_CREDENTIALS, { AWS_EC2_METADATA_DISABLED: "true" });
    const client = new TicketsClient(FUNCTION_URL, { fetch: toStub });
    assert.deepEqual(await client.next("orders", 2), [1, 2]);
    const received = stub.requests.at(-1) as Recorded;
    assert.equal(received.path, "/orders?count=2");
    const match = AUTHORIZATION.exec(received.headers.authorization ?? "");
    assert.ok(match, received.headers.authorization);
    const [, date, signedHeaders, signature] = match;
    assert.match(received.headers["x-amz-date"] ?? "", /^\d{8}T\d{6}Z$/);
    assert.ok(received.headers["x-amz-date"]?.startsWith(date as string));
    assert.equal(received.headers["x-amz-security-token"], FAKE_CREDENTIALS.AWS_SESSION_TOKEN);
    for (const name of ["host", "x-amz-date", "x-amz-security-token", "idempotency-key"]) {
      assert.ok(signedHeaders?.split(";").includes(name), `${name} is not signed: ${signedHeaders}`);
    }
    const host = new URL(FUNCTION_URL).host;
    const secret = FAKE_CREDENTIALS.AWS_SECRET_ACCESS_KEY;
    assert.equal(signature, expectedSignature(received, host, secret));
    assert.notEqual(signature, expectedSignature({ ...received, path: "/orders?count=3" }, host, secret));
  });

  test("explicit credentials sign without a session token; unsigned requests carry no authorization", async () => {
    const credentials = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" };
    await new TicketsClient(FUNCTION_URL, { fetch: toStub, credentials }).next("orders", 2);
    const signed = stub.requests.at(-1) as Recorded;
    assert.equal(signed.headers["x-amz-security-token"], undefined);
    assert.match(signed.headers.authorization ?? "", AUTHORIZATION);
    assert.equal(signed.headers.authorization?.split("Signature=")[1], expectedSignature(signed, new URL(FUNCTION_URL).host, "secret"));

    await new TicketsClient(stub.url).next("orders", 2);
    assert.equal((stub.requests.at(-1) as Recorded).headers.authorization, undefined);
  });

  test("no credentials anywhere is a clear no_credentials error", async () => {
    for (const name of [...Object.keys(FAKE_CREDENTIALS), "AWS_PROFILE"]) delete process.env[name];
    Object.assign(process.env, {
      AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/credentials",
      AWS_CONFIG_FILE: "/nonexistent/config",
      AWS_EC2_METADATA_DISABLED: "true",
    });
    const requests = stub.requests.length;
    const client = new TicketsClient(stub.url, { sign: true, region: "us-east-1" });
    await assert.rejects(client.next("orders"), (err: unknown) => {
      assert.ok(err instanceof TicketsError);
      assert.deepEqual([err.status, err.code], [null, "no_credentials"]);
      return true;
    });
    assert.equal(stub.requests.length, requests); // nothing was sent
  });
});
