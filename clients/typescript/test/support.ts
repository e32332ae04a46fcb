/** What the tests share: the local server (started here unless TICKETS_URL names one), scripted stub
 * servers on 127.0.0.1 that record what came, and a manual clock. */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

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
};

export interface LocalServer {
  url: string;
  /** true when these tests started it with LOCAL_CONFIG; false when TICKETS_URL names a server. */
  ownConfig: boolean;
  stop(): Promise<void>;
}

/** The server named by TICKETS_URL, or `python -m tickets_local --port 0` from the repo's .venv
 * (TICKETS_PYTHON overrides the interpreter), stopped by stop(). */
export async function localServer(): Promise<LocalServer> {
  const named = process.env.TICKETS_URL;
  if (named) return { url: named, ownConfig: false, stop: async () => {} };
  const directory = mkdtempSync(join(tmpdir(), "tickets-ts-"));
  const config = join(directory, "cdk.json");
  writeFileSync(config, JSON.stringify({ app: "unused", context: { tickets: LOCAL_CONFIG } }));
  const python = process.env.TICKETS_PYTHON ?? join(REPO, ".venv", "bin", "python");
  const child = spawn(python, ["-m", "tickets_local", "--port", "0", "--config", config], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    return { url: await announcedUrl(child, python), ownConfig: true, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The server prints a banner with `url: http://127.0.0.1:PORT` once it listens. */
function announcedUrl(child: ChildProcess, python: string): Promise<string> {
  return new Promise((found, failed) => {
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => failed(new Error(`the local server did not start in 60 s:\n${stderr}`)), 60_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^\s*url:\s+(http:\/\/\S+)$/m.exec(stdout);
      if (match) {
        clearTimeout(timer);
        found(match[1] as string);
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      failed(new Error(`cannot run ${python} (run make test, or set TICKETS_PYTHON or TICKETS_URL): ${err.message}`));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      failed(new Error(`the local server exited (${code}) before it listened:\n${stderr}`));
    });
  });
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
