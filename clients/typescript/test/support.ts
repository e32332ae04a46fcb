/** What the tests share: the local server (started here unless TICKETS_URL names one), scripted stub
 * servers on 127.0.0.1 that record what came, and a manual clock. */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { startLocalTickets } from "../src/testing.js";

// The repository's root: this file runs as clients/typescript/dist/test/support.js.
export const REPO = resolve(fileURLToPath(import.meta.url), "../../../../..");

/** cdk.json's `tickets` for a server these tests start: one region, one lane per key, and a key whose
 * blocks the server refuses above 300 tickets (its maxBlock). */
export const LOCAL_CONFIG = {
  defaultKey: "default",
  auth: "AWS_IAM",
  regions: { "us-east-1": 0 },
  regionSlots: 1,
  strictKeys: false,
  counters: { orders: { start: 5000 }, "small-blocks": { maxBlock: 300 } },
  series: { "ts-invoices": { start: 1, format: "T-{n:03}" }, "ts-wide": { start: 1 } },
};

export interface LocalServer {
  url: string;
  /** true when these tests started it with LOCAL_CONFIG; false when TICKETS_URL names a server. */
  ownConfig: boolean;
  stop(): Promise<void>;
}

/** The server named by TICKETS_URL, or one started by the package's own test helper
 * (`tickets-client/testing`) with LOCAL_CONFIG, on the repo's .venv (TICKETS_PYTHON overrides the
 * interpreter), stopped by stop(). */
export async function localServer(): Promise<LocalServer> {
  const named = process.env.TICKETS_URL;
  if (named) return { url: named, ownConfig: false, stop: async () => {} };
  const python = process.env.TICKETS_PYTHON ?? join(REPO, ".venv", "bin", "python");
  const tickets = await startLocalTickets({ config: LOCAL_CONFIG, python });
  return { url: tickets.url, ownConfig: true, stop: () => tickets.stop() };
}

export interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string>;
}

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return { status, body, headers };
}

/** Answers each request with the next scripted reply (the last one again once they run out) and
 * records what came. */
export class StubServer {
  readonly requests: Recorded[] = [];
  private readonly server: Server;

  private constructor(private readonly replies: Reply[]) {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      request.resume();
      request.on("end", () => {
        this.requests.push({
          method: request.method ?? "",
          path: request.url ?? "",
          headers: request.headers as Record<string, string>,
        });
        const reply = this.replies[Math.min(this.requests.length, this.replies.length) - 1] as Reply;
        const body = JSON.stringify(reply.body);
        response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        response.end(body);
      });
    });
  }

  static async start(replies: Reply[]): Promise<StubServer> {
    const stub = new StubServer(replies);
    await new Promise<void>((listening) => stub.server.listen(0, "127.0.0.1", listening));
    return stub;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((closed) => this.server.close(closed));
  }
}

/** A sleep that records the delays instead of waiting. */
export function recordingSleep(delays: number[]): (seconds: number) => Promise<void> {
  return async (seconds) => {
    delays.push(seconds);
  };
}

/** Time moves only when told to: by the test, or by a block source standing for a slow network. */
export class ManualClock {
  now = 100;
  readonly read = (): number => this.now;

  advance(seconds: number): void {
    this.now += seconds;
  }
}

/** A key no other test or run has used: tests against a server named by TICKETS_URL must not
 * depend on what is already stored. */
export function freshKey(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
