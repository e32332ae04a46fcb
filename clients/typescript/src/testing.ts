/** Tickets for your tests (docs/how-to/test-your-code.md): a local server (`python -m tickets_local`) of your own, which
 * stops with stop() or when your process ends (its stdin closes). */
import { type ChildProcess, spawn } from "node:child_process";

/** cdk.json's `tickets` when none is given: one region, one lane per key (tickets 1, 2, 3...), any key. */
export const DEFAULT_CONFIG: Readonly<Record<string, unknown>> = Object.freeze({
  regions: { "us-east-1": 0 },
  regionSlots: 1,
  strictKeys: false,
});
const RESET_PATH = "/_local/reset"; // tickets_local.server.RESET_PATH
const BANNER_END = "Ctrl-C stops it.";
const START_TIMEOUT_SECONDS = 60; // importing moto on a loaded machine; a start normally takes under a second
const STOP_TIMEOUT_SECONDS = 10;
const LOG_TAIL_CHARS = 4000;

export interface LocalTicketsOptions {
  /** cdk.json's `tickets` object (same fields, same validation); DEFAULT_CONFIG when absent. */
  config?: Record<string, unknown>;
  /** The Python to run the server with: default TICKETS_PYTHON, else `python3`. */
  python?: string;
  /** One of the config's regions (default: the first): its slot decides the tickets' lane. */
  region?: string;
  /** Where the server's tables are (docs/reference/backends.md): "memory" (the default), "moto", or "endpoint". */
  backend?: string;
  /** A DynamoDB-compatible endpoint (dynalite, DynamoDB Local) for the endpoint backend. */
  endpointUrl?: string;
  /** The keys of opaque counters' ids, a key file (made there if missing); default: made at start. */
  keyFile?: string;
  /** More of the server's flags (docs/reference/local-server.md). */
  serverArgs?: string[];
}

export interface LocalTickets {
  /** The local Function URL, e.g. http://127.0.0.1:41234 (no signing: pass it to TicketsClient as is). */
  readonly url: string;
  /** What the server printed when it started: url, backend, region and slot, tables. */
  readonly banner: string;
  /** With opaque counters: the key file their ids are made with. */
  readonly keyFile: string | undefined;
  /** Every counter and idempotency record gone, and the handler's cached state with them. */
  reset(): Promise<void>;
  /** Stop the server and wait for it to exit. */
  stop(): Promise<void>;
}

export async function startLocalTickets(options: LocalTicketsOptions = {}): Promise<LocalTickets> {
  const python = options.python ?? process.env.TICKETS_PYTHON ?? "python3";
  const args = ["-m", "tickets_local", "--port", "0", "--allow-reset", "--exit-with-stdin"];
  args.push("--config-json", JSON.stringify(options.config ?? DEFAULT_CONFIG));
  if (options.region) args.push("--region", options.region);
  if (options.backend) args.push("--backend", options.backend);
  if (options.endpointUrl) args.push("--endpoint-url", options.endpointUrl);
  if (options.keyFile) args.push("--key-file", options.keyFile);
  args.push(...(options.serverArgs ?? []));
  const child = spawn(python, args, { stdio: ["pipe", "pipe", "pipe"] });
  let log = ""; // the server's stderr, its end kept: one line per request, and why it failed
  child.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-LOG_TAIL_CHARS)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    child.stdin?.end(); // --exit-with-stdin: the server stops cleanly
    setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_SECONDS * 1000).unref(); // a no-op once it exited
    await exited;
  };
  const banner = await announced(child, python, () => log).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  const url = /^\s*url:\s+(http:\/\/\S+)$/m.exec(banner)?.[1] as string;
  const keyFile = options.keyFile ?? /^\s*keys:\s+(\S+)/m.exec(banner)?.[1];
  return {
    url,
    banner,
    keyFile,
    reset: async () => {
      const response = await fetch(url + RESET_PATH, { method: "POST" });
      await response.arrayBuffer(); // read to its end: the connection goes back to fetch's pool
      if (response.status !== 200) throw new Error(`the local server did not reset (HTTP ${response.status}):\n${log}`);
    },
    stop,
  };
}

/** The banner, once the server printed all of it (it then listens). */
function announced(child: ChildProcess, python: string, log: () => string): Promise<string> {
  return new Promise((found, failed) => {
    let stdout = "";
    const late = (): void => failed(new Error(`the local server did not start in ${START_TIMEOUT_SECONDS} s:\n${log()}`));
    setTimeout(late, START_TIMEOUT_SECONDS * 1000).unref(); // a no-op once settled; unref'd, it holds no process open
    const onData = (chunk: Buffer): void => {
      stdout += chunk.toString();
      if (stdout.includes(BANNER_END)) {
        child.stdout?.off("data", onData);
        child.stdout?.resume(); // what follows ("stopped") is not waited for
        found(stdout);
      }
    };
    child.stdout?.on("data", onData);
    const why = "set TICKETS_PYTHON, or pass python, to a Python with Tickets installed";
    child.once("error", (err) => failed(new Error(`cannot run ${python} (${why}): ${err.message}`)));
    // The exit may come before the last of stderr: read it once the streams have closed.
    child.once("exit", (code) => setImmediate(() => failed(new Error(exitedBefore(python, code, log())))));
  });
}

/** Why the server exited before it listened; a Python without Tickets is told where to find or install it. */
function exitedBefore(python: string, code: number | null, log: string): string {
  if (/No module named '?tickets_local/.test(log)) {
    const fix = `set TICKETS_PYTHON (or python) to a Python with Tickets, or: ${python} -m pip install "path/to/tickets[testing]"`;
    return `${python} has no tickets_local: ${fix} (docs/how-to/test-your-code.md)`;
  }
  return `the local server exited (${code}) before it listened:\n${log}`;
}
