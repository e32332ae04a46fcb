/**
 * A client for a Tickets Function URL (or the local server), the Python client's (clients/python)
 * twin: the same requests, retries, idempotency keys and errors.
 *
 *     const client = new TicketsClient("https://abc123.lambda-url.us-east-1.on.aws"); // signs: AWS_IAM
 *     await client.next("orders");            // [5000]
 *     await client.next("orders", 3);         // [5001, 5002, 5003], one request
 *     await client.nextIds("order-numbers", 2); // ["4829173650", "0756218394"]: an opaque counter's ids
 *     await client.block("orders", 1000000);  // Block { first: 5004, last: 1005003, step: 1, count: 1000000 }
 *     await client.state("orders");           // the counter's state, issues nothing
 *
 * Every logical request carries one `Idempotency-Key`, the same on each of its retries, so a retry
 * after a lost answer gets the first answer instead of burning tickets.
 *
 * Retries: 429, 503 and lost connections, up to `maxAttempts` attempts; 502 and 504 (the function
 * failed or timed out, perhaps after issuing) only for requests that carry an Idempotency-Key, whose
 * retry gets that first answer; and 409 `in_progress` (the first attempt with this key still holds its
 * lock) for up to IN_PROGRESS_RETRY_SECONDS of waiting, past `maxAttempts`: a first attempt that
 * crashed holds the lock until its request's deadline, before the function's timeout. Waits are capped exponential backoff with full
 * jitter, and at least the server's Retry-After.
 *
 * docs/reference/clients.md states the rules both clients share (Retry-After, what counts as an attempt, which
 * answers are refused); clients/conformance.json holds the cases both clients' tests run.
 */
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";

import { TicketsError } from "./errors.js";
import { type CredentialSource, Signer, functionUrlRegion } from "./signing.js";
import { LeaseLost, PoolFull, type WorkerGrant, workerGrant } from "./workers.js";

export const USER_AGENT = "tickets-client-ts/0.3.0"; // the package.json version (tests/packaging/test_client_packaging.py)
export const BACKOFF_BASE_SECONDS = 0.1;
export const BACKOFF_CAP_SECONDS = 5.0;
export const MAX_RETRY_AFTER_SECONDS = 30.0; // a Retry-After beyond this is honoured only this far
// The function's timeout: lambda_src/tickets/timing.py FUNCTION_TIMEOUT_SECONDS (the client does not
// read the server's code; tests/unit/test_typescript_client.py checks the two agree).
export const FUNCTION_TIMEOUT_SECONDS = 10;
export const IN_PROGRESS_RETRY_SECONDS = FUNCTION_TIMEOUT_SECONDS + 5; // past the lock's expiry, with a margin
export const IN_PROGRESS_MAX_ATTEMPTS = 60; // a bound on attempts too, whatever the jitter draws
export const MAX_BLOCK = 1_000_000; // the most tickets one /_blocks request may ask for (a deployment may allow fewer)
const GATEWAY_ERRORS = new Set([502, 504]);

/** `count` tickets of one lane: first, first + step, ..., last. */
export class Block {
  constructor(
    readonly first: number,
    readonly last: number,
    readonly step: number,
    readonly count: number,
  ) {}

  /** The i-th ticket of the block (0-based). */
  ticket(index: number): number {
    return this.first + this.step * index;
  }

  *tickets(): IterableIterator<number> {
    for (let index = 0; index < this.count; index++) yield this.ticket(index);
  }
}

export interface ClientOptions {
  /** Sign with SigV4; default: only *.lambda-url.<region>.on.aws URLs. */
  sign?: boolean;
  /** Region for signing; default: the one in the Function URL. */
  region?: string;
  /** Credentials for signing; default: the AWS SDK's chain (environment, ~/.aws, SSO, container or instance role). */
  credentials?: CredentialSource;
  /** Seconds per attempt (default 5). */
  timeoutSeconds?: number;
  /** Attempts per request for 429, 503, lost connections and (with an Idempotency-Key) 502 and 504 (default 5). */
  maxAttempts?: number;
  /** How the client waits between attempts (tests pass one that records instead). */
  sleep?: (seconds: number) => Promise<void>;
  /** The fetch to send with (default: Node's global fetch), e.g. one that goes through a proxy. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /**
   * Send an Idempotency-Key (default true). false sends none: a retry after a lost answer then burns
   * that block (a gap), and the server saves its idempotency writes.
   */
  idempotent?: boolean;
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
  /** The document this number is for (up to 128 characters), kept in the journal. */
  ref?: string;
  /**
   * The Idempotency-Key (default: a new UUID, the same for all attempts). Store your own with the
   * document to get the same number back after your process restarts.
   */
  idempotencyKey?: string;
}

export const JOURNAL_PAGE = 100; // entries per GET /_series/{key}/journal while iterating (the server allows up to 500)

interface Sent {
  idempotent: boolean; // send an Idempotency-Key
  idempotencyKey?: string;
  body?: string;
  repeatable?: boolean; // answered alike however often it comes: a 502 or 504 may be retried
}

export class TicketsClient {
  readonly url: string;
  private readonly base: URL;
  private readonly signer: Signer | null;
  private readonly timeoutSeconds: number;
  private readonly maxAttempts: number;
  private readonly sleep: (seconds: number) => Promise<void>;
  private readonly fetch: typeof fetch;

  constructor(url: string, options: ClientOptions = {}) {
    let base: URL;
    try {
      base = new URL(url);
    } catch {
      throw new TypeError(`not an http(s) URL: ${JSON.stringify(url)}`);
    }
    if ((base.protocol !== "http:" && base.protocol !== "https:") || !base.hostname) {
      throw new TypeError(`not an http(s) URL: ${JSON.stringify(url)}`);
    }
    const maxAttempts = options.maxAttempts ?? 5;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError("maxAttempts must be at least 1");
    this.url = url.replace(/\/+$/, "");
    this.base = base;
    const urlRegion = functionUrlRegion(base.hostname);
    const region = options.region ?? urlRegion;
    this.signer = null;
    if (options.sign ?? urlRegion !== null) {
      if (region === null) {
        throw new TypeError(`signing needs a region; pass region (the URL ${JSON.stringify(url)} does not name one)`);
      }
      this.signer = new Signer(region, options.credentials);
    }
    this.timeoutSeconds = options.timeoutSeconds ?? 5;
    this.maxAttempts = maxAttempts;
    this.sleep = options.sleep ?? ((seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000)));
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  get signing(): boolean {
    return this.signer !== null;
  }

  /** `count` new tickets of `key` (the deployment's default key when undefined), ascending. */
  async next(key?: string, count = 1, options: RequestOptions = {}): Promise<number[]> {
    return checkedTickets(await this.issue(key, count, options), count);
  }

  /**
   * `count` new ids of the opaque counter `key` (cdk.json's `counters.KEY.opaque`), in its tickets' order,
   * which the ids do not show. An opaque counter answers ids, never tickets: `next` refuses its answer
   * (code `opaque_counter`), and this method a plain counter's (`not_opaque`).
   */
  async nextIds(key?: string, count = 1, options: RequestOptions = {}): Promise<string[]> {
    return checkedIds(await this.issue(key, count, options), count);
  }

  /**
   * The server's whole answer, e.g. {key: "orders", ticket: 5000}, or an opaque counter's
   * {key: "orders", id: "4829173650"}, once its tickets (or ids) check out.
   */
  async issue(key?: string, count = 1, options: RequestOptions = {}): Promise<Answer> {
    const query = count !== 1 ? `?count=${count}` : "";
    const answer = await this.request("POST", keyPath(key) + query, options.idempotent ?? true);
    if ("id" in answer) checkedIds(answer, count);
    else checkedTickets(answer, count);
    return answer;
  }

  /**
   * `count` new tickets of `key` as a range (`POST /_blocks/{key}`): one request and one write for up
   * to MAX_BLOCK tickets, and an answer of four numbers whatever the count.
   */
  async block(key: string, count: number, options: RequestOptions = {}): Promise<Block> {
    const answer = await this.request("POST", `/_blocks${keyPath(key)}?count=${count}`, options.idempotent ?? true);
    const numbers = [answer.first, answer.last, answer.step, answer.count];
    if (!(["first", "last", "step", "count"] as const).every((name) => isTicket(answer, name))) {
      throw new TicketsError(200, "bad_response", `the server's answer is not a block: ${show(answer)}`);
    }
    const block = new Block(...(numbers as [number, number, number, number]));
    if (block.count !== count || block.step < 1 || block.last !== block.ticket(count - 1)) {
      throw new TicketsError(200, "bad_response", `asked for a block of ${count} tickets, got ${show(answer)}`);
    }
    return block;
  }

  /** The counter's state (`last`, `step`, config, lanes); 404 `not_found` if never used. */
  async state(key: string): Promise<Answer> {
    return this.request("GET", "/_counters" + keyPath(key), false);
  }

  /**
   * The next number of the series `key` (`POST /_series/{key}`), journaled with `ref`. Always sends an
   * Idempotency-Key, the same on every retry, so a lost answer never costs a number.
   */
  async series(key: string, options: SeriesOptions = {}): Promise<SeriesNumber> {
    const body = options.ref === undefined ? "" : JSON.stringify({ ref: options.ref });
    const answer = await this.request("POST", `/_series${keyPath(key)}`, {
      idempotent: true,
      body,
      ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
    });
    const id = answer.id ?? null;
    if (!isTicket(answer, "ticket") || typeof answer.series !== "string" || (id !== null && typeof id !== "string")) {
      throw new TicketsError(200, "bad_response", `the server's answer is not a series number: ${show(answer)}`);
    }
    return { key: typeof answer.key === "string" ? answer.key : key, series: answer.series, ticket: answer.ticket as number, id };
  }

  /** Void a number (`POST /_series/{key}/void`); safe to retry: voiding again answers the first void. */
  async void(key: string, series: string, ticket: number, reason: string): Promise<Answer> {
    const body = JSON.stringify({ series, ticket, reason });
    return this.request("POST", `/_series${keyPath(key)}/void`, { idempotent: false, repeatable: true, body });
  }

  /** Every journal entry of the series above `after`, in order, fetched a page of `limit` at a time. */
  async *journal(key: string, series: string, after?: number, limit = JOURNAL_PAGE): AsyncGenerator<Answer> {
    let from = after;
    for (;;) {
      const query = new URLSearchParams({ series, limit: String(limit), ...(from !== undefined ? { after: String(from) } : {}) });
      const page = await this.request("GET", `/_series${keyPath(key)}/journal?${query}`, { idempotent: false, repeatable: true });
      if (!Array.isArray(page.entries)) {
        throw new TicketsError(200, "bad_response", `the server's answer is not a journal page: ${show(page)}`);
      }
      yield* page.entries as Answer[];
      if (typeof page.next !== "number") return;
      from = page.next;
    }
  }

  /**
   * A free worker id of `pool` (`POST /_workers/{pool}`). One Idempotency-Key (`idempotencyKey`, else a new
   * UUID) for every attempt, so an acquire retried after a lost answer gets the same grant. A full pool is not
   * retried: it throws PoolFull, with the seconds until the earliest expiry in `retryAfter`.
   */
  async acquireWorker(pool: string, options: { owner?: string; idempotencyKey?: string } = {}): Promise<WorkerGrant> {
    const body = options.owner === undefined ? "" : JSON.stringify({ owner: options.owner });
    const key = options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {};
    try {
      return workerGrant(await this.request("POST", poolPath(pool), { idempotent: true, body, ...key }));
    } catch (err) {
      if (!(err instanceof TicketsError) || err.code !== "pool_full") throw err;
      const wait = err.retryAfter === null ? "" : `; retry after ${err.retryAfter} s`;
      throw new PoolFull(err.status, err.code, `${err.message}${wait}`, err.retryAfter);
    }
  }

  /** `PUT /_workers/{pool}/{worker}`: the lease held at `epoch`, with a new expiry; 409 lease_lost throws LeaseLost. */
  async renewWorker(pool: string, worker: number, epoch: number): Promise<WorkerGrant> {
    const body = JSON.stringify({ epoch });
    try {
      return workerGrant(await this.request("PUT", poolPath(pool, worker), { idempotent: false, repeatable: true, body }));
    } catch (err) {
      if (!(err instanceof TicketsError) || err.code !== "lease_lost") throw err;
      throw new LeaseLost(err.status, err.code, err.message);
    }
  }

  /** `DELETE /_workers/{pool}/{worker}`: whether this released the lease (false: stale, or released already). */
  async releaseWorker(pool: string, worker: number, epoch: number): Promise<boolean> {
    const body = JSON.stringify({ epoch });
    const answer = await this.request("DELETE", poolPath(pool, worker), { idempotent: false, repeatable: true, body });
    if (typeof answer.released !== "boolean") {
      throw new TicketsError(200, "bad_response", `the server's answer is not a release: ${show(answer)}`);
    }
    return answer.released;
  }

  /** `GET /_workers/{pool}`: {pool, size, ttlSeconds, leases: [{worker, epoch, owner, expiresAt}]}, live leases only. */
  async listWorkers(pool: string): Promise<Answer> {
    const answer = await this.request("GET", poolPath(pool), { idempotent: false, repeatable: true });
    if (!isTicket(answer, "size") || !Array.isArray(answer.leases)) {
      throw new TicketsError(200, "bad_response", `the server's answer is not a pool: ${show(answer)}`);
    }
    return answer;
  }

  private async request(method: string, path: string, how: boolean | Sent): Promise<Answer> {
    const sending: Sent = typeof how === "boolean" ? { idempotent: how } : how;
    const idempotent = sending.idempotent || sending.repeatable === true;
    const target = new URL(this.base.pathname.replace(/\/+$/, "") + path, this.base);
    const headers: Record<string, string> = { accept: "application/json", "user-agent": USER_AGENT };
    if (sending.idempotent) headers["idempotency-key"] = sending.idempotencyKey ?? randomUUID(); // one key for all attempts
    if (sending.body) headers["content-type"] = "application/json";
    const body = method === "GET" ? undefined : (sending.body ?? "");
    let attempts = 0;
    let failedAttempts = 0;
    let waited = 0;
    for (;;) {
      attempts++;
      const sent = this.signer ? await this.signer.headers(method, target, headers, body ?? "") : headers;
      let failure: TicketsError;
      let delay: number;
      try {
        const response = await this.fetch(target, {
          method,
          headers: sent,
          ...(body !== undefined ? { body } : {}),
          signal: AbortSignal.timeout(this.timeoutSeconds * 1000),
        });
        const text = await response.text();
        if (response.status < 300) return jsonObject(response.status, text);
        failure = serverError(response.status, text, retryAfter(response.headers.get("retry-after")));
        if (!retryable(failure, idempotent)) throw failure;
        delay = Math.max(failure.retryAfter ?? 0, backoff(attempts));
      } catch (err) {
        if (err instanceof TicketsError) throw err;
        failure = new TicketsError(null, "unreachable", `no answer from ${this.url}: ${describe(err)}`);
        delay = backoff(attempts);
      }
      let giveUp: boolean;
      if (inProgress(failure)) {
        giveUp = waited >= IN_PROGRESS_RETRY_SECONDS || attempts >= IN_PROGRESS_MAX_ATTEMPTS;
      } else {
        failedAttempts++;
        giveUp = failedAttempts >= this.maxAttempts;
      }
      if (giveUp) throw failure;
      await this.sleep(delay);
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

/**
 * A whole number a JS number holds exactly, written as an integer: a larger ticket would arrive rounded,
 * and 7.0 or 7e0 is no integer answer (JSON.parse cannot tell them from 7: `jsonObject` notes them).
 */
function isTicket(holder: object, key: string | number): boolean {
  const value = (holder as Record<string, unknown>)[key];
  return Number.isSafeInteger(value) && !notWrittenAsIntegers.get(holder)?.has(String(key));
}

/** The answer's tickets, checked: `count` safe integers, ascending by one step, the first `ticket`. */
function checkedTickets(answer: Answer, count: number): number[] {
  if ("id" in answer && !("ticket" in answer)) {
    throw new TicketsError(
      200,
      "opaque_counter",
      `the counter is opaque: it answers ids, not tickets; take them with nextIds(): ${show(answer)}`,
    );
  }
  const tickets = "tickets" in answer ? answer.tickets : [answer.ticket];
  if (
    !Array.isArray(tickets) ||
    tickets.length !== count ||
    !tickets.every((_, index) => isTicket(tickets, index)) ||
    !isTicket(answer, "ticket") ||
    answer.ticket !== tickets[0]
  ) {
    throw new TicketsError(200, "bad_response", `asked for ${count} tickets, got ${show(answer)}`);
  }
  const steps = new Set(tickets.slice(1).map((ticket: number, index) => ticket - (tickets[index] as number)));
  if (steps.size > 1 || Math.min(...steps, 1) < 1) {
    throw new TicketsError(200, "bad_response", `the tickets are not ascending by one step: ${show(answer)}`);
  }
  return tickets as number[];
}

/** An opaque counter's ids, checked: `count` different non-empty strings, the first `id`. */
function checkedIds(answer: Answer, count: number): string[] {
  if ("ticket" in answer && !("id" in answer)) {
    const said = `the counter is not opaque: it answers tickets; take them with next(): ${show(answer)}`;
    throw new TicketsError(200, "not_opaque", said);
  }
  const ids = "ids" in answer ? answer.ids : [answer.id];
  if (
    !Array.isArray(ids) ||
    ids.length !== count ||
    !ids.every((each) => typeof each === "string" && each !== "") ||
    new Set(ids).size !== count ||
    answer.id !== ids[0]
  ) {
    throw new TicketsError(200, "bad_response", `asked for ${count} ids, got ${show(answer)}`);
  }
  return ids as string[];
}

function retryable(error: TicketsError, idempotent: boolean): boolean {
  // A 502 or 504 may come after the function issued: only an Idempotency-Key makes the retry get that
  // answer instead of new tickets.
  const status = error.status ?? 0;
  const busy = (status === 429 || status === 503) && error.code !== "pool_full"; // a full pool frees an id at an expiry
  return busy || inProgress(error) || (idempotent && GATEWAY_ERRORS.has(status));
}

/** 409 in_progress: the first attempt with this Idempotency-Key is still running; its answer follows. */
function inProgress(error: TicketsError): boolean {
  return error.status === 409 && error.code === "in_progress";
}

/** Capped exponential backoff with full jitter: spread retries so callers don't stampede. */
export function backoff(attempt: number): number {
  return Math.random() * Math.min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1));
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const MONTH = `(${MONTHS.join("|")})`;
const TIME = "([0-9]{2}):([0-9]{2}):([0-9]{2})";
// RFC 9110 section 5.6.7: IMF-fixdate, and the two obsolete forms a recipient must also accept.
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) ${MONTH} ([0-9]{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), ([0-9]{2})-${MONTH}-([0-9]{2}) ${TIME} GMT$`,
);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([0-9 ][0-9]) ${TIME} ([0-9]{4})$`);

/**
 * Seconds from a Retry-After header as RFC 9110 (section 10.2.3) defines it: delay-seconds (digits
 * only) or an HTTP-date, capped at MAX_RETRY_AFTER_SECONDS; a date in the past is 0. null when absent or
 * anything else (`1.5`, `-1`, `0x10`, `nan`, `inf`, a date in another form): the backoff decides.
 */
export function retryAfter(header: string | null, nowMs: number = Date.now()): number | null {
  const value = (header ?? "").replace(/^[ \t]+|[ \t]+$/g, "");
  if (/^[0-9]+$/.test(value)) return Math.min(Number(value), MAX_RETRY_AFTER_SECONDS);
  const date = httpDate(value, new Date(nowMs).getUTCFullYear());
  if (date === null) return null;
  return Math.min(Math.max((date - nowMs) / 1000, 0), MAX_RETRY_AFTER_SECONDS);
}

/** Milliseconds since the epoch of an HTTP-date, or null. */
function httpDate(value: string, thisYear: number): number | null {
  let fields: (string | undefined)[];
  let match: RegExpExecArray | null;
  if ((match = IMF_FIXDATE.exec(value))) {
    const [, day, month, year, hour, minute, second] = match;
    fields = [year, month, day, hour, minute, second];
  } else if ((match = RFC850_DATE.exec(value))) {
    const [, day, month, shortYear, hour, minute, second] = match;
    // A two-digit year more than 50 years ahead is the most recent past year with those digits.
    let year = Math.floor(thisYear / 100) * 100 + Number(shortYear);
    if (year > thisYear + 50) year -= 100;
    else if (year + 100 <= thisYear + 50) year += 100;
    fields = [String(year), month, day, hour, minute, second];
  } else if ((match = ASCTIME_DATE.exec(value))) {
    const [, month, day, hour, minute, second, year] = match;
    fields = [year, month, day, hour, minute, second];
  } else {
    return null;
  }
  const [year, month, day, hour, minute, second] = fields.map((field, index) =>
    index === 1 ? MONTHS.indexOf(field as string) : Number(field),
  ) as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(year, month, day, hour, minute, second));
  // Date.UTC rolls 31 Feb over into March, and 25:00 into the next day: such a date is no date.
  const exact =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second;
  return exact ? date.getTime() : null;
}

function jsonObject(status: number, text: string): Answer {
  const answer = parseJson(text, true);
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
    const keys = notWrittenAsIntegers.get(this) ?? new Set<string>();
    keys.add(key);
    notWrittenAsIntegers.set(this, keys);
  }
  return value;
}

/**
 * The server's {error, message}; for other bodies (a proxy's page, AWS's own 403 {"Message":
 * "Forbidden"}), a code made from the status and what text there is.
 */
function serverError(status: number, text: string, wait: number | null = null): TicketsError {
  const answer = parseJson(text);
  const fields = answer !== null && typeof answer === "object" ? (answer as Answer) : {};
  if (typeof fields.error === "string") {
    return new TicketsError(status, fields.error, String(fields.message ?? ""), wait);
  }
  const message = fields.Message ?? fields.message ?? (text.trim().slice(0, 200) || STATUS_CODES[status] || "");
  return new TicketsError(status, `http_${status}`, String(message), wait);
}

function parseJson(text: string, noting = false): unknown {
  try {
    const parse = JSON.parse as (text: string, reviver?: Reviver) => unknown;
    return noting ? parse(text, noteNonIntegers) : parse(text);
  } catch {
    return null;
  }
}

function show(answer: Answer): string {
  return JSON.stringify(answer).slice(0, 200);
}

/** fetch's errors hide the reason (ECONNREFUSED, a timeout) in `cause`. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return `${err.message || err.name}${cause}`;
}
