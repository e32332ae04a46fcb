/** The TypeScript client against clients/conformance.json, the cases the Python client's tests run too
 * (tests/functional/test_client_conformance.py): each case's scripted answers from a stub server on 127.0.0.1, and
 * what the client must return or throw, how many requests it sends and how long it waits before each
 * retry. Also the Retry-After rules of docs/reference/clients.md, unit by unit. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, test } from "node:test";

import { Block, TicketsClient, TicketsError } from "../src/index.js";
import { retryAfter } from "../src/client.js";
import { REPO, recordingSleep } from "./support.js";

interface ScriptedReply {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  text?: string;
  drop?: boolean;
}

interface Case {
  name: string;
  call: {
    method: "next" | "nextIds" | "block" | "acquireWorker" | "renewWorker" | "releaseWorker" | "listWorkers";
    key: string;
    count?: number;
    maxAttempts?: number;
    idempotent?: boolean;
    owner?: string;
    worker?: number;
    epoch?: number;
  };
  replies: ScriptedReply[];
  expect: {
    tickets?: number[];
    ids?: string[];
    block?: { first: number; last: number; step: number; count: number };
    grant?: Record<string, unknown>;
    released?: boolean;
    pool?: Record<string, unknown>;
    error?: { status: number | null; code: string };
    retryAfter?: number;
    attempts: number;
    delays: [number, number][];
    sent?: { method: string; path: string; body: unknown };
    keys?: number;
  };
}

/** The case's call on `client`. */
function callOf(client: TicketsClient, call: Case["call"]): Promise<unknown> {
  const options = { idempotent: call.idempotent ?? true };
  const { key, worker, epoch } = call;
  const calls = {
    block: () => client.block(key, call.count as number, options),
    nextIds: () => client.nextIds(key, call.count ?? 1, options),
    next: () => client.next(key, call.count ?? 1, options),
    acquireWorker: () => client.acquireWorker(key, call.owner !== undefined ? { owner: call.owner } : {}),
    renewWorker: () => client.renewWorker(key, worker as number, epoch as number),
    releaseWorker: () => client.releaseWorker(key, worker as number, epoch as number),
    listWorkers: () => client.listWorkers(key),
  };
  return calls[call.method]();
}

const CASES = (JSON.parse(readFileSync(join(REPO, "clients", "conformance.json"), "utf8")) as { cases: Case[] }).cases;
const WARM_UP_PATH = "/_counters/warm-up"; // the runner's request before each case, not one of the case's

/** Answers the case's replies in order (the last one again once they run out); `drop` reads the request
 * and closes the connection unanswered. Counts the requests of the case, and keeps the last one (method, path,
 * JSON body or null) and the Idempotency-Keys they carried. */
class ScriptedServer {
  requests = 0;
  sent: { method: string; path: string; body: unknown } | null = null;
  readonly keys = new Set<string>();
  private readonly server: Server;

  constructor(private readonly replies: ScriptedReply[]) {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        if (request.url === WARM_UP_PATH) {
          response.writeHead(200, { "content-type": "application/json" });
          response.end(JSON.stringify({ key: "warm-up", last: 0 }));
          return;
        }
        this.requests++;
        const body = Buffer.concat(chunks).toString();
        this.sent = { method: request.method ?? "", path: request.url ?? "", body: body ? JSON.parse(body) : null };
        const key = request.headers["idempotency-key"];
        if (typeof key === "string") this.keys.add(key);
        const reply = this.replies[Math.min(this.requests, this.replies.length) - 1] as ScriptedReply;
        if (reply.drop) {
          request.socket.destroy();
          return;
        }
        response.writeHead(reply.status as number, { "content-type": "application/json", ...reply.headers });
        response.end(reply.text ?? JSON.stringify(reply.body));
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((listening) => this.server.listen(0, "127.0.0.1", listening));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((closed) => this.server.close(closed));
  }
}

describe("conformance (clients/conformance.json)", () => {
  for (const testCase of CASES) {
    test(testCase.name, async () => {
      const { call, expect } = testCase;
      const server = new ScriptedServer(testCase.replies);
      await server.start();
      const delays: number[] = [];
      let result: unknown;
      try {
        const client = new TicketsClient(server.url, { maxAttempts: call.maxAttempts ?? 5, sleep: recordingSleep(delays) });
        await client.state("warm-up"); // the case's first attempt goes out on a kept-alive connection
        try {
          result = await callOf(client, call);
        } catch (err) {
          result = err;
        }
      } finally {
        await server.stop();
      }
      if (expect.error) {
        assert.ok(result instanceof TicketsError, `expected ${JSON.stringify(expect.error)}, got ${String(result)}`);
        assert.deepEqual({ status: result.status, code: result.code }, expect.error);
        if (expect.retryAfter !== undefined) assert.equal(result.retryAfter, expect.retryAfter);
      } else if (expect.grant || expect.pool || expect.released !== undefined) {
        assert.deepEqual(result, expect.grant ?? expect.pool ?? expect.released);
      } else if (expect.block) {
        const { first, last, step, count } = expect.block;
        assert.deepEqual(result, new Block(first, last, step, count));
      } else if (expect.ids) {
        assert.deepEqual(result, expect.ids);
      } else {
        assert.deepEqual(result, expect.tickets);
      }
      assert.equal(server.requests, expect.attempts);
      if (expect.sent) assert.deepEqual(server.sent, expect.sent);
      if (expect.keys !== undefined) assert.equal(server.keys.size, expect.keys);
      assert.equal(delays.length, expect.delays.length, `${delays}`);
      delays.forEach((delay, index) => {
        const [low, high] = expect.delays[index] as [number, number];
        assert.ok(low <= delay && delay <= high, `${delays} outside ${JSON.stringify(expect.delays)}`);
      });
    });
  }
});

describe("Retry-After (RFC 9110)", () => {
  const now = Date.UTC(2100, 11, 31, 22, 59, 59); // an hour before Fri, 31 Dec 2100 23:59:59 GMT

  test("delay-seconds and HTTP-dates, capped", () => {
    assert.equal(retryAfter("7", now), 7);
    assert.equal(retryAfter("007", now), 7);
    assert.equal(retryAfter(" 7 ", now), 7);
    assert.equal(retryAfter("99999999999999999999999", now), 30);
    assert.equal(retryAfter("Fri, 31 Dec 2100 23:59:59 GMT", now), 30);
    assert.equal(retryAfter("Fri, 31 Dec 2100 22:59:59 GMT", now), 0);
    assert.equal(retryAfter("Fri, 31 Dec 2100 21:59:59 GMT", now), 0);
  });

  test("dates are counted from now, in each of the three forms", () => {
    const twelveBefore = Date.UTC(2100, 11, 31, 23, 59, 47);
    assert.equal(retryAfter("Fri, 31 Dec 2100 23:59:59 GMT", twelveBefore), 12);
    assert.equal(retryAfter("Friday, 31-Dec-00 23:59:59 GMT", twelveBefore), 12);
    assert.equal(retryAfter("Fri Dec 31 23:59:59 2100", twelveBefore), 12);
  });

  test("values outside RFC 9110 are ignored", () => {
    for (const value of ["", null, "nan", "inf", "-inf", "0x10", "+5", "1.5", "1e1", "٣", "5 s", "soon"]) {
      assert.equal(retryAfter(value), null, `${value}`);
    }
  });
});
