/** The client over real HTTP: against the local server, and against scripted stub servers on
 * 127.0.0.1 for retries, Retry-After, idempotency keys and errors. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Block, IN_PROGRESS_RETRY_SECONDS, TicketsClient, TicketsError } from "../src/index.js";
import { type LocalServer, StubServer, freshKey, jsonReply, localServer, recordingSleep } from "./support.js";

// docs/reference/series.md's limits (lambda_src/tickets/series/journal.py;
// tests/functional/test_client_unicode.py checks they agree).
const MAX_REF_CHARS = 128;
const MAX_REASON_CHARS = 500;
const WIDE = "\u{20000}"; // 4 bytes in UTF-8; 12 if a client escaped it in its JSON

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function refusal(promise: Promise<unknown>): Promise<TicketsError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof TicketsError, `not a TicketsError: ${err}`);
    return err;
  }
  assert.fail("expected a TicketsError");
}

describe("against the local server", () => {
  let server: LocalServer;
  let client: TicketsClient;
  before(async () => {
    server = await localServer();
    client = new TicketsClient(server.url);
  });
  after(async () => server.stop());

  test("next, a list of tickets, and the state", async () => {
    assert.equal(client.signing, server.url.includes(".lambda-url."));
    const key = freshKey("ts-next");
    const [first] = await client.next(key);
    const more = await client.next(key, 3);
    assert.equal(more.length, 3);
    const step = (more[1] as number) - (more[0] as number);
    assert.ok(step >= 1 && (more[0] as number) > (first as number));
    assert.deepEqual(more, [0, 1, 2].map((i) => (more[0] as number) + i * step));
    const state = await client.state(key);
    assert.equal(state.last, more[2]);
    if (server.ownConfig) {
      assert.deepEqual(await client.next("orders", 2), [5000, 5001]); // the config's start
      assert.deepEqual(await client.next(), [1]); // the default key
    }
  });

  test("a range block is one request, answered as first, last, step and count", async () => {
    const key = freshKey("ts-block");
    const block = await client.block(key, 1_000);
    assert.ok(block instanceof Block);
    assert.equal(block.count, 1_000);
    assert.equal(block.last, block.first + block.step * 999);
    const tickets = [...block.tickets()];
    assert.equal(tickets.length, 1_000);
    assert.equal(new Set(tickets).size, 1_000);
    const after = await client.block(key, 3, { idempotent: false });
    assert.ok(after.first > block.last);
    if (server.ownConfig) {
      assert.deepEqual(block, new Block(1, 1_000, 1, 1_000));
      assert.deepEqual(await client.block(freshKey("ts-big"), 1_000_000), new Block(1, 1_000_000, 1, 1_000_000));
    }
  });

  test("the server's refusals carry status, code and message", async () => {
    const tooMany = await refusal(client.next("orders", 1001));
    assert.deepEqual([tooMany.status, tooMany.code], [400, "bad_request"]);
    assert.match(tooMany.message, /count/);
    const badKey = await refusal(client.next("bad key!"));
    assert.deepEqual([badKey.status, badKey.code], [400, "bad_request"]);
    assert.match(badKey.message, /invalid key/);
    const missing = await refusal(client.state(freshKey("ts-never-used")));
    assert.deepEqual([missing.status, missing.code], [404, "not_found"]);
    const bigBlock = await refusal(client.block("orders", 1_000_001));
    assert.deepEqual([bigBlock.status, bigBlock.code], [400, "bad_request"]);
  });

  describe("series", () => {
    test("a number per call, the same for a reused Idempotency-Key, voids and the journal in pages", async (t) => {
      if (!server.ownConfig) return t.skip("TICKETS_URL names a server whose config may have no series");
      const first = await client.series("ts-invoices", { ref: "order 1" });
      assert.deepEqual(first, { key: "ts-invoices", series: "all", ticket: 1, id: "T-001" });
      const kept = await client.series("ts-invoices", { ref: "order 2", idempotencyKey: "document-2" });
      assert.deepEqual(await client.series("ts-invoices", { ref: "order 2", idempotencyKey: "document-2" }), kept);
      await client.series("ts-invoices");
      const voided = await client.void("ts-invoices", "all", 2, "cancelled");
      assert.equal((voided.voided as { reason: string }).reason, "cancelled");
      const entries = [];
      for await (const entry of client.journal("ts-invoices", "all", undefined, 2)) entries.push(entry);
      assert.deepEqual(
        entries.map((e) => [e.ticket, e.ref]),
        [
          [1, "order 1"],
          [2, "order 2"],
          [3, null],
        ],
      );
      const never = await refusal(client.void("ts-invoices", "all", 99, "never issued"));
      assert.equal(never.status, 404);
    });

    test("the longest ref and reason in 4-byte characters: the body is UTF-8, unescaped", async (t) => {
      if (!server.ownConfig) return t.skip("TICKETS_URL names a server whose config may have no series");
      const number = await client.series("ts-wide", { ref: WIDE.repeat(MAX_REF_CHARS) });
      const voided = await client.void("ts-wide", number.series, number.ticket, WIDE.repeat(MAX_REASON_CHARS));
      assert.equal((voided.voided as { reason: string }).reason, WIDE.repeat(MAX_REASON_CHARS));
      const entries = [];
      for await (const entry of client.journal("ts-wide", number.series)) entries.push(entry);
      assert.deepEqual(
        entries.map((e) => e.ref),
        [WIDE.repeat(MAX_REF_CHARS)],
      );
    });
  });
});

describe("retries", () => {
  const stubs: StubServer[] = [];
  async function stub(...replies: ReturnType<typeof jsonReply>[]): Promise<StubServer> {
    const started = await StubServer.start(replies);
    stubs.push(started);
    return started;
  }
  after(async () => Promise.all(stubs.map((s) => s.stop())));

  test("a series number's retry sends the same Idempotency-Key, its body JSON", async () => {
    const server = await stub(
      jsonReply(503, { error: "unavailable", message: "throttled" }),
      jsonReply(200, { key: "invoices", series: "2026", ticket: 4, id: "INV/2026/4" }),
    );
    const number = await new TicketsClient(server.url, { sleep: recordingSleep([]) }).series("invoices", { ref: "o9" });
    assert.deepEqual(number, { key: "invoices", series: "2026", ticket: 4, id: "INV/2026/4" });
    const [first, second] = server.requests;
    assert.match(first?.headers["idempotency-key"] ?? "", UUID_V4);
    assert.equal(first?.headers["idempotency-key"], second?.headers["idempotency-key"]);
    assert.equal(first?.headers["content-type"], "application/json");
    assert.deepEqual([first?.method, first?.path], ["POST", "/_series/invoices"]);
  });

  test("503 is retried after Retry-After with the same Idempotency-Key", async () => {
    const server = await stub(
      jsonReply(503, { error: "unavailable", message: "throttled" }, { "retry-after": "2" }),
      jsonReply(200, { key: "orders", ticket: 7 }),
    );
    const delays: number[] = [];
    assert.deepEqual(await new TicketsClient(server.url, { sleep: recordingSleep(delays) }).next("orders"), [7]);
    const [first, second] = server.requests;
    assert.match(first?.headers["idempotency-key"] ?? "", UUID_V4);
    assert.equal(first?.headers["idempotency-key"], second?.headers["idempotency-key"]);
    assert.deepEqual([first?.method, first?.path], ["POST", "/orders"]);
    assert.equal(delays.length, 1);
    assert.ok((delays[0] as number) >= 2 && (delays[0] as number) <= 2.1);
  });

  test("each logical request gets its own key; without idempotency and for state reads, none", async () => {
    const server = await stub(jsonReply(200, { key: "orders", ticket: 7 }));
    const client = new TicketsClient(server.url);
    await client.next("orders");
    await client.next("orders");
    await client.next("orders", 1, { idempotent: false });
    await client.block("orders", 1, { idempotent: false }).catch(() => undefined); // a ticket, not a block
    await client.state("orders");
    const keys = server.requests.map((r) => r.headers["idempotency-key"]);
    assert.notEqual(keys[0], keys[1]);
    assert.deepEqual(keys.slice(2), [undefined, undefined, undefined]);
  });

  test("a client URL's path is kept, its query and fragment are not (as the Python client's)", async () => {
    const server = await stub(jsonReply(200, { key: "orders", ticket: 7 }));
    await new TicketsClient(`${server.url}/base/?x=1#frag`).next("orders");
    await new TicketsClient(`${server.url}/?x=1`).next("orders");
    assert.deepEqual(
      server.requests.map((r) => r.path),
      ["/base/orders", "/orders"],
    );
  });

  test("429 gives up after maxAttempts with capped, jittered backoff", async () => {
    const server = await stub(jsonReply(429, { error: "too_many_requests", message: "slow down" }));
    const delays: number[] = [];
    const client = new TicketsClient(server.url, { maxAttempts: 4, sleep: recordingSleep(delays) });
    const error = await refusal(client.next("orders", 5));
    assert.deepEqual([error.status, error.code, error.message], [429, "too_many_requests", "slow down"]);
    assert.equal(server.requests.length, 4);
    assert.equal(delays.length, 3);
    delays.forEach((delay, attempt) => assert.ok(delay >= 0 && delay <= 0.1 * 2 ** attempt));
    assert.equal(new Set(server.requests.map((r) => r.headers["idempotency-key"])).size, 1);
    assert.equal(server.requests[0]?.path, "/orders?count=5");
  });

  test("409 in_progress is retried past maxAttempts until the first answer", async () => {
    const inProgress = jsonReply(409, { error: "in_progress", message: "in flight" });
    // 5 refusals: their jittered waits add up to at most 0.1 + 0.2 + 0.4 + 0.8 + 1.6 s, inside the window.
    const server = await stub(...Array(5).fill(inProgress), jsonReply(200, { key: "orders", ticket: 9 }));
    const client = new TicketsClient(server.url, { maxAttempts: 3, sleep: recordingSleep([]) });
    assert.deepEqual(await client.next("orders"), [9]);
    assert.equal(server.requests.length, 6);
    assert.equal(new Set(server.requests.map((r) => r.headers["idempotency-key"])).size, 1);
  });

  test("409 in_progress retries cover the function's timeout, then stop", async () => {
    const server = await stub(
      jsonReply(409, { error: "in_progress", message: "in flight" }, { "retry-after": "30" }),
    );
    const delays: number[] = [];
    const error = await refusal(new TicketsClient(server.url, { sleep: recordingSleep(delays) }).next("orders"));
    assert.equal(error.code, "in_progress");
    const waited = delays.reduce((a, b) => a + b, 0);
    assert.ok(waited >= IN_PROGRESS_RETRY_SECONDS && waited < IN_PROGRESS_RETRY_SECONDS + 30, `${waited}`);
  });

  for (const status of [502, 504]) {
    test(`${status} is retried when the request carries an Idempotency-Key, and not without one`, async () => {
      const gateway = jsonReply(status, { Message: "Internal Server Error" });
      const server = await stub(gateway, jsonReply(200, { key: "orders", ticket: 3 }));
      assert.deepEqual(await new TicketsClient(server.url, { sleep: recordingSleep([]) }).next("orders"), [3]);
      assert.equal(server.requests.length, 2);

      const once = await stub(gateway, jsonReply(200, { key: "orders", ticket: 4 }));
      const client = new TicketsClient(once.url, { sleep: recordingSleep([]) });
      const error = await refusal(client.next("orders", 1, { idempotent: false }));
      assert.deepEqual([error.status, error.code, error.message], [status, `http_${status}`, "Internal Server Error"]);
      assert.equal(once.requests.length, 1);
    });
  }

  test("other errors are not retried", async () => {
    for (const reply of [
      jsonReply(400, { error: "bad_request", message: "invalid key" }),
      jsonReply(409, { error: "exhausted", message: "no more" }),
      jsonReply(500, { error: "internal_error", message: "oops" }),
    ]) {
      const server = await stub(reply);
      const error = await refusal(new TicketsClient(server.url, { sleep: recordingSleep([]) }).next("orders"));
      assert.equal(error.status, reply.status);
      assert.equal(server.requests.length, 1);
    }
  });

  test("a foreign error body, AWS's own 403, still gives a clear error", async () => {
    const server = await stub(jsonReply(403, { Message: "Forbidden" }));
    const error = await refusal(new TicketsClient(server.url).next("orders"));
    assert.deepEqual([error.status, error.code, error.message], [403, "http_403", "Forbidden"]);
  });

  test("answers that are not what was asked for are bad_response", async () => {
    for (const answer of [
      { key: "k", ticket: 1 },
      { key: "k", first: 1, last: 9, step: 1, count: 9 },
      { key: "k", first: 1, last: 10, step: 1, count: "10" },
      { key: "k", first: 1, last: 10, step: 0, count: 10 },
    ]) {
      const server = await stub(jsonReply(200, answer));
      const error = await refusal(new TicketsClient(server.url).block("k", 10));
      assert.equal(error.code, "bad_response");
      assert.deepEqual([server.requests[0]?.method, server.requests[0]?.path], ["POST", "/_blocks/k?count=10"]);
    }
    // A ticket above 2^53 - 1 would arrive rounded in a JS number: refused, not rounded.
    const big = await stub(jsonReply(200, { key: "k", ticket: 2 ** 53 + 2 }));
    assert.equal((await refusal(new TicketsClient(big.url).next("k"))).code, "bad_response");
    const text = await stub(jsonReply(200, "not an object"));
    assert.equal((await refusal(new TicketsClient(text.url).next("k"))).code, "bad_response");
  });

  test("a refused connection is retried, then reported as unreachable", async () => {
    const delays: number[] = [];
    const client = new TicketsClient("http://127.0.0.1:9", { maxAttempts: 3, sleep: recordingSleep(delays) });
    const error = await refusal(client.next("orders"));
    assert.equal(error.status, null);
    assert.equal(error.code, "unreachable");
    assert.match(error.message, /^no answer from http:\/\/127\.0\.0\.1:9: /);
    assert.equal(delays.length, 2);
  });

  test("a URL the client cannot use and impossible options are refused at once", () => {
    assert.throws(() => new TicketsClient("ftp://example.com"), TypeError);
    assert.throws(() => new TicketsClient("not a url"), TypeError);
    assert.throws(() => new TicketsClient("http://127.0.0.1:8000", { maxAttempts: 0 }), RangeError);
  });
});
