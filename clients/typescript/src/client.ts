/** A client for a Tickets Function URL, the Python client's twin (docs/reference/clients.md, clients/conformance.json). */
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import { setTimeout as sleepMs } from "node:timers/promises";

import { LeaseLost, PoolFull, TicketsError } from "./errors.js";
import { type CredentialSource, type Signer, functionUrlRegion, signer } from "./signing.js";
import type { WorkerGrant } from "./workers.js";

export const USER_AGENT = "tickets-client-ts/0.3.0"; // the package.json version (tests/packaging/test_client_packaging.py)
export const BACKOFF_BASE_SECONDS = 0.1;
export const BACKOFF_CAP_SECONDS = 5.0;
export const MAX_RETRY_AFTER_SECONDS = 30.0; // a Retry-After beyond this is honoured only this far
export const FUNCTION_TIMEOUT_SECONDS = 10; // lambda_src/tickets/timing.py's (tests/unit/test_typescript_client.py)
export const IN_PROGRESS_RETRY_SECONDS = FUNCTION_TIMEOUT_SECONDS + 5; // past the lock's expiry, with a margin
export const IN_PROGRESS_MAX_ATTEMPTS = 60; // a bound on attempts too, whatever the jitter draws
export const MAX_BLOCK = 1_000_000; // the most tickets one /_blocks request may ask for (a deployment may allow fewer)
export const JOURNAL_PAGE = 100; // entries per GET /_series/{key}/journal while iterating (the server allows up to 500)

/** `count` tickets of one lane: first, first + step, ..., last. */
export class Block {
  constructor(
    readonly first: number,
    readonly last: number,
    readonly step: number,
    readonly count: number,
  ) {}

  ticket(index: number): number {
    return this.first + this.step * index;
  }

  *tickets(): IterableIterator<number> {
    for (let index = 0; index < this.count; index++) yield this.ticket(index);
  }
}

/** The Python client's options, camelCase (docs/reference/clients.md), and `credentials` and `fetch` (default: Node's). */
export interface ClientOptions {
  sign?: boolean;
  region?: string;
  credentials?: CredentialSource;
  timeoutSeconds?: number;
  maxAttempts?: number;
  sleep?: (seconds: number) => Promise<void>;
  fetch?: typeof fetch;
}

export interface RequestOptions {
  idempotent?: boolean; // default true: send an Idempotency-Key
}

type Answer = Record<string, unknown>;

/** One number of a series (docs/reference/series.md): `id` is the number in the series' format, if it has one. */
export interface SeriesNumber {
  key: string;
  series: string;
  ticket: number;
  id: string | null;
}

export interface SeriesOptions {
  ref?: string;
  /** The Idempotency-Key (default: a new UUID); store your own with the document to get its number back after a restart. */
  idempotencyKey?: string;
}

interface Sent {
  idempotent?: boolean; // send an Idempotency-Key: `idempotencyKey`, else a new UUID, one for all attempts
  idempotencyKey?: string | undefined;
  fields?: Answer | undefined; // the JSON body
  repeatable?: boolean; // answered alike however often it comes: a 502 or 504 may be retried
}

export class TicketsClient {
  readonly url: string;
  private readonly base: URL;
  private readonly signer: Signer | null = null;

  constructor(
    url: string,
    private readonly options: ClientOptions = {},
  ) {
    const base = URL.canParse(url) ? new URL(url) : null;
    if ((base?.protocol !== "http:" && base?.protocol !== "https:") || !base.hostname) {
      throw new TypeError(`not an http(s) URL: ${JSON.stringify(url)}`);
    }
    const { maxAttempts = 5 } = options;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError("maxAttempts must be at least 1");
    this.url = url.replace(/\/+$/, "");
    this.base = base;
    const urlRegion = functionUrlRegion(base.hostname);
    const region = options.region ?? urlRegion;
    if (options.sign ?? urlRegion !== null) {
      if (region === null) {
        throw new TypeError(`signing needs a region; pass region (the URL ${JSON.stringify(url)} does not name one)`);
      }
      this.signer = signer(region, options.credentials);
    }
  }

  get signing(): boolean {
    return this.signer !== null;
  }

  /** `count` new tickets of `key` (undefined: the default key), ascending. */
  async next(key?: string, count = 1, options: RequestOptions = {}): Promise<number[]> {
    return checkedTickets(await this.unchecked(key, count, options), count);
  }

  /** `count` new ids of the opaque counter `key`, in its tickets' order (`next` refuses them: `opaque_counter`). */
  async nextIds(key?: string, count = 1, options: RequestOptions = {}): Promise<string[]> {
    return checkedIds(await this.unchecked(key, count, options), count);
  }

  /** The server's whole answer, e.g. {key: "orders", ticket: 5000} or {key, id}, once its tickets (or ids) check out. */
  async issue(key?: string, count = 1, options: RequestOptions = {}): Promise<Answer> {
    const answer = await this.unchecked(key, count, options);
    if ("id" in answer) checkedIds(answer, count);
    else checkedTickets(answer, count);
    return answer;
  }

  /** The answer unchecked: next, nextIds and issue each check it once, as they read it. */
  private async unchecked(key: string | undefined, count: number, options: RequestOptions): Promise<Answer> {
    const query = count !== 1 ? `?count=${count}` : "";
    return this.request("POST", keyPath(key) + query, { idempotent: options.idempotent ?? true });
  }

  /** `count` new tickets of `key` as a range (`POST /_blocks/{key}`): one request and one write, up to MAX_BLOCK. */
  async block(key: string, count: number, options: RequestOptions = {}): Promise<Block> {
    const path = `/_blocks${keyPath(key)}?count=${count}`;
    const answer = await this.request("POST", path, { idempotent: options.idempotent ?? true });
    const names = ["first", "last", "step", "count"] as const;
    if (!names.every((name) => isTicket(answer, name))) throw badResponse("the server's answer is not a block: ", answer);
    const block = new Block(...(names.map((name) => answer[name]) as [number, number, number, number]));
    if (block.count !== count || block.step < 1 || block.last !== block.ticket(count - 1)) {
      throw badResponse(`asked for a block of ${count} tickets, got `, answer);
    }
    return block;
  }

  /** The counter's state (`last`, `step`, config, lanes); 404 `not_found` if never used. */
  async state(key: string): Promise<Answer> {
    return this.request("GET", "/_counters" + keyPath(key));
  }

  /** The next number of the series `key` (`POST /_series/{key}`), journaled with `ref`; always with an Idempotency-Key. */
  async series(key: string, options: SeriesOptions = {}): Promise<SeriesNumber> {
    const fields = options.ref === undefined ? undefined : { ref: options.ref };
    const sent = { idempotent: true, idempotencyKey: options.idempotencyKey, fields };
    const answer = await this.request("POST", `/_series${keyPath(key)}`, sent);
    const id = answer.id ?? null;
    if (!isTicket(answer, "ticket") || typeof answer.series !== "string" || (id !== null && typeof id !== "string")) {
      throw badResponse("the server's answer is not a series number: ", answer);
    }
    return { key: typeof answer.key === "string" ? answer.key : key, series: answer.series, ticket: answer.ticket as number, id };
  }

  /** Void a number (`POST /_series/{key}/void`); safe to retry: voiding again answers the first void. */
  async void(key: string, series: string, ticket: number, reason: string): Promise<Answer> {
    return this.request("POST", `/_series${keyPath(key)}/void`, { repeatable: true, fields: { series, ticket, reason } });
  }

  /** Every journal entry of the series above `after`, in order, fetched a page of `limit` at a time. */
  async *journal(key: string, series: string, after?: number, limit = JOURNAL_PAGE): AsyncGenerator<Answer> {
    for (;;) {
      const query = new URLSearchParams({ series, limit: String(limit), ...(after !== undefined ? { after: String(after) } : {}) });
      const page = await this.request("GET", `/_series${keyPath(key)}/journal?${query}`, { repeatable: true });
      if (!Array.isArray(page.entries)) throw badResponse("the server's answer is not a journal page: ", page);
      yield* page.entries as Answer[];
      if (typeof page.next !== "number") return;
      after = page.next;
    }
  }

  /** A free worker id of `pool`, one Idempotency-Key for every attempt; a full pool throws PoolFull, not retried. */
  async acquireWorker(pool: string, options: { owner?: string; idempotencyKey?: string } = {}): Promise<WorkerGrant> {
    const fields = options.owner === undefined ? undefined : { owner: options.owner };
    const sent = { idempotent: true, idempotencyKey: options.idempotencyKey, fields };
    return workerGrant(await this.request("POST", poolPath(pool), sent));
  }

  /** `PUT /_workers/{pool}/{worker}`: the lease held at `epoch`, with a new expiry; 409 lease_lost throws LeaseLost. */
  async renewWorker(pool: string, worker: number, epoch: number): Promise<WorkerGrant> {
    return workerGrant(await this.request("PUT", poolPath(pool, worker), { repeatable: true, fields: { epoch } }));
  }

  /** `DELETE /_workers/{pool}/{worker}`: whether this released the lease (false: stale, or released already). */
  async releaseWorker(pool: string, worker: number, epoch: number): Promise<boolean> {
    const answer = await this.request("DELETE", poolPath(pool, worker), { repeatable: true, fields: { epoch } });
    if (typeof answer.released !== "boolean") throw badResponse("the server's answer is not a release: ", answer);
    return answer.released;
  }

  /** `GET /_workers/{pool}`: {pool, size, ttlSeconds, leases: [{worker, epoch, owner, expiresAt}]}, live leases only. */
  async listWorkers(pool: string): Promise<Answer> {
    const answer = await this.request("GET", poolPath(pool), { repeatable: true });
    if (!isTicket(answer, "size") || !Array.isArray(answer.leases)) throw badResponse("the server's answer is not a pool: ", answer);
    return answer;
  }

  private async request(method: string, path: string, sending: Sent = {}): Promise<Answer> {
    const target = new URL(this.base.pathname.replace(/\/+$/, "") + path, this.base); // the path only, as Python's
    const headers: Record<string, string> = { accept: "application/json", "user-agent": USER_AGENT };
    if (sending.idempotent) headers["idempotency-key"] = sending.idempotencyKey ?? randomUUID(); // one key for all attempts
    if (sending.fields) headers["content-type"] = "application/json";
    const body = method === "GET" ? undefined : sending.fields ? JSON.stringify(sending.fields) : "";
    const { timeoutSeconds = 5, maxAttempts = 5, fetch = globalThis.fetch } = this.options;
    const { sleep = (seconds: number) => sleepMs(seconds * 1000) } = this.options;
    let [attempts, failedAttempts, waited] = [0, 0, 0];
    for (;;) {
      attempts++;
      const sent = this.signer ? await this.signer(method, target, headers, body ?? "") : headers;
      let failure: TicketsError;
      let delay: number;
      try {
        const response = await fetch(target, {
          method,
          headers: sent,
          ...(body !== undefined ? { body } : {}),
          signal: AbortSignal.timeout(timeoutSeconds * 1000),
        });
        const text = await response.text();
        if (response.status < 300) return jsonObject(response.status, text);
        failure = serverError(response.status, text, retryAfter(response.headers.get("retry-after")));
        if (!retryable(failure, sending.idempotent || sending.repeatable)) throw failure;
        delay = Math.max(failure.retryAfter ?? 0, backoff(attempts));
      } catch (err) {
        if (err instanceof TicketsError) throw err;
        failure = new TicketsError(null, "unreachable", `no answer from ${this.url}: ${describe(err)}`);
        delay = backoff(attempts);
      }
      const giveUp = inProgress(failure)
        ? waited >= IN_PROGRESS_RETRY_SECONDS || attempts >= IN_PROGRESS_MAX_ATTEMPTS
        : ++failedAttempts >= maxAttempts;
      if (giveUp) throw failure;
      await sleep(delay);
      waited += delay;
    }
  }
}

function poolPath(pool: string, worker?: number): string {
  return `/_workers/${encodeURIComponent(pool)}${worker === undefined ? "" : `/${worker}`}`;
}

function keyPath(key: string | undefined): string {
  return key === undefined ? "/" : "/" + encodeURIComponent(key);
}

/** A whole number a JS number holds exactly, written as an integer (7.0 or 7e0 is none: `jsonObject` notes them). */
function isTicket(holder: object, key: string | number): boolean {
  const value = (holder as Record<string, unknown>)[key];
  return Number.isSafeInteger(value) && !notWrittenAsIntegers.get(holder)?.has(String(key));
}

function checkedTickets(answer: Answer, count: number): number[] {
  const tickets = issued(answer, count, "ticket", "id", "opaque_counter", "an opaque counter: take its ids with nextIds()");
  const steps = new Set(tickets.slice(1).map((ticket, index) => (ticket as number) - (tickets[index] as number)));
  if (steps.size > 1 || Math.min(...steps, 1) < 1) throw badResponse("the tickets are not ascending by one step: ", answer);
  return tickets as number[];
}

function checkedIds(answer: Answer, count: number): string[] {
  return issued(answer, count, "id", "ticket", "not_opaque", "not an opaque counter: take its tickets with next()") as string[];
}

/** The answer's `name`s (or its one `name`), checked: `count` different ones, the first `name`; `other`'s refused. */
function issued(answer: Answer, count: number, name: string, other: string, code: string, said: string): unknown[] {
  if (other in answer && !(name in answer)) throw badResponse(`${said}: `, answer, code);
  const valid = name === "ticket" ? isTicket : (holder: object, key: string | number) => isId((holder as Answer)[key]);
  const all = `${name}s` in answer ? answer[`${name}s`] : [answer[name]];
  if (
    !Array.isArray(all) ||
    all.length !== count ||
    !all.every((_, index) => valid(all, index)) ||
    !valid(answer, name) ||
    (name !== "ticket" && new Set(all).size !== count) || // tickets: checkedTickets' one step of 1 or more
    answer[name] !== all[0]
  ) {
    throw badResponse(`asked for ${count} ${name}s, got `, answer);
  }
  return all;
}

function isId(value: unknown): boolean {
  return typeof value === "string" && value !== "";
}

function workerGrant(answer: Answer): WorkerGrant {
  const { pool, worker, epoch, expiresAt, ttlSeconds } = answer;
  const numbers = [worker, epoch, expiresAt, ttlSeconds];
  if (typeof pool !== "string" || !numbers.every((n) => Number.isSafeInteger(n) && (n as number) >= 0) || (epoch as number) < 1) {
    throw badResponse("the server's answer is not a worker lease: ", answer);
  }
  return { pool, worker, epoch, expiresAt, ttlSeconds } as WorkerGrant;
}

function retryable(error: TicketsError, idempotent: boolean | undefined): boolean {
  // A 502 or 504 may come after the function issued: only an Idempotency-Key makes the retry get that answer.
  const status = error.status ?? 0;
  const busy = (status === 429 || status === 503) && error.code !== "pool_full"; // a full pool frees an id at an expiry
  return busy || inProgress(error) || (idempotent === true && (status === 502 || status === 504));
}

/** 409 in_progress: the first attempt with this Idempotency-Key is still running; its answer follows. */
function inProgress(error: TicketsError): boolean {
  return error.status === 409 && error.code === "in_progress";
}

function backoff(attempt: number): number {
  return Math.random() * Math.min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1));
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const MONTH = `(?<month>${MONTHS.join("|")})`;
const TIME = "(?<hour>[0-9]{2}):(?<minute>[0-9]{2}):(?<second>[0-9]{2})";
// RFC 9110 section 5.6.7: IMF-fixdate, and the two obsolete forms a recipient must also accept.
const HTTP_DATES = [
  `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<day>[0-9]{2}) ${MONTH} (?<year>[0-9]{4}) ${TIME} GMT`,
  `(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?<day>[0-9]{2})-${MONTH}-(?<year>[0-9]{2}) ${TIME} GMT`,
  `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} (?<day>[0-9 ][0-9]) ${TIME} (?<year>[0-9]{4})`,
].map((form) => new RegExp(`^${form}$`));

/** Seconds from a Retry-After header as RFC 9110 (section 10.2.3) defines it: the Python client's retry_after. */
export function retryAfter(header: string | null, nowMs: number = Date.now()): number | null {
  const value = (header ?? "").replace(/^[ \t]+|[ \t]+$/g, "");
  if (/^[0-9]+$/.test(value)) return Math.min(Number(value), MAX_RETRY_AFTER_SECONDS);
  const found = HTTP_DATES.map((form) => form.exec(value)?.groups).find((groups) => groups !== undefined);
  if (found === undefined) return null;
  const thisYear = new Date(nowMs).getUTCFullYear();
  let year = Number(found.year);
  // RFC 850's two-digit year: the latest year with those digits at most 50 years ahead.
  if (found.year?.length === 2) year = thisYear + 50 - ((thisYear + 50 - year) % 100);
  const time = [found.day, found.hour, found.minute, found.second].map(Number);
  const fields = [year, MONTHS.indexOf(found.month as string), ...time] as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(...fields));
  // Date.UTC rolls 31 Feb over into March, and 25:00 into the next day: such a date is no date.
  const read = [date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()];
  if (!read.every((field, index) => field === fields[index])) return null;
  return Math.min(Math.max((date.getTime() - nowMs) / 1000, 0), MAX_RETRY_AFTER_SECONDS);
}

function jsonObject(status: number, text: string): Answer {
  const answer = parseJson(text);
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) {
    throw new TicketsError(status, "bad_response", `expected a JSON object, got ${JSON.stringify(text.slice(0, 200))}`);
  }
  return answer as Answer;
}

/** For each object or array of a parsed answer, the keys of its numbers written with a fraction or an exponent. */
const notWrittenAsIntegers = new WeakMap<object, Set<string>>();
const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/;

/** JSON.parse's reviver sees each number's source text (Node 22 and later; older ones pass none). */
type Reviver = (this: object, key: string, value: unknown, context?: { source?: string }) => unknown;

function noteNonIntegers(this: object, key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === "number" && context?.source !== undefined && !INTEGER_LITERAL.test(context.source)) {
    notWrittenAsIntegers.set(this, (notWrittenAsIntegers.get(this) ?? new Set<string>()).add(key));
  }
  return value;
}

/** The server's {error, message}; for other bodies (a proxy's page, AWS's 403), `http_<status>` and text. */
function serverError(status: number, text: string, wait: number | null): TicketsError {
  const answer = parseJson(text);
  const fields = answer !== null && typeof answer === "object" ? (answer as Answer) : {};
  const { error: code } = fields;
  const message = String(fields.message ?? "");
  if (code === "pool_full") return new PoolFull(status, code, `${message}${wait === null ? "" : `; retry after ${wait} s`}`, wait);
  if (typeof code === "string") return new (code === "lease_lost" ? LeaseLost : TicketsError)(status, code, message, wait);
  const said = fields.Message ?? fields.message ?? (text.trim().slice(0, 200) || STATUS_CODES[status] || "");
  return new TicketsError(status, `http_${status}`, String(said), wait);
}

function parseJson(text: string): unknown {
  try {
    return (JSON.parse as (text: string, reviver?: Reviver) => unknown)(text, noteNonIntegers);
  } catch {
    return null;
  }
}

function badResponse(said: string, answer: Answer, code = "bad_response"): TicketsError {
  return new TicketsError(200, code, `${said}${JSON.stringify(answer).slice(0, 200)}`);
}

/** fetch's errors hide the reason (ECONNREFUSED, a timeout) in `cause`. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return `${err.message || err.name}${cause}`;
}
