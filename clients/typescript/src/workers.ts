/** Worker-id leases and a Snowflake-style id generator on one, the Python client's twin (docs/reference/clients.md).
 * performance.now() stops in a suspend, so the safe end has passed when EITHER it or the wall clock says so. */
import { EventEmitter } from "node:events";
import { setTimeout as sleepMs } from "node:timers/promises";

import type { TicketsClient } from "./client.js";
import { ClockRollback, LeaseLost, TicketsError } from "./errors.js";

export const DEFAULT_RENEW_FRACTION = 1 / 3;
export const MIN_MARGIN_SECONDS = 1.0;
export const MARGIN_FRACTION = 0.1; // of the ttl: the default margin is the larger of the two
export const RENEW_RETRY_SECONDS = 1.0; // after a renewal that got no answer, the next try
export const DEFAULT_EPOCH_MS = 1_735_689_600_000; // 2025-01-01T00:00:00Z: with 41 bits of milliseconds, until 2094
export const DEFAULT_TIME_BITS = 41;
export const DEFAULT_WORKER_BITS = 10;
export const DEFAULT_SEQUENCE_BITS = 12;
export const ID_BITS = 63; // a signed 64-bit integer's, so ids stay positive in every language and database
export const DEFAULT_MAX_ROLLBACK_SECONDS = 1.0; // how far back the wall clock may step before the generator throws

/** A lease as the service answered it: `expiresAt` is milliseconds by ITS wall clock (for display only). */
export interface WorkerGrant {
  pool: string;
  worker: number;
  epoch: number;
  expiresAt: number;
  ttlSeconds: number;
}

export type WorkerSource = Pick<TicketsClient, "acquireWorker" | "renewWorker" | "releaseWorker" | "listWorkers">;

export interface WorkerLeaseOptions {
  owner?: string;
  renewFraction?: number;
  marginSeconds?: number;
  onLost?: (loss: LeaseLost) => void;
  /** Your own, kept across a restart to get the same grant back (renewed at once). */
  idempotencyKey?: string;
  /** Seconds on a monotonic clock. */
  monotonic?: () => number;
  /** Milliseconds on the wall clock (default Date.now), which counts a suspend. */
  wallClock?: () => number;
  /** Renew on a timer (default true); false: whoever calls renewDue() renews. */
  background?: boolean;
}

const monotonicSeconds = (): number => performance.now() / 1000;

/** When a request went out: seconds on the monotonic clock, milliseconds on the wall clock. */
type Sent = readonly [monotonic: number, wallMs: number];

/** Why a lease of these would be lost to one unanswered renewal (null: its retry comes before the safe end). */
function renewalRefusal(ttl: number, margin: number, fraction: number): string | null {
  const [renews, safe] = [fraction * ttl, ttl - margin];
  const retries = renews + Math.min(RENEW_RETRY_SECONDS, renews);
  const g = (value: number): number => Number(value.toPrecision(6)); // as Python's :g
  if (margin >= ttl) return `a margin of ${g(margin)} s leaves nothing of a ${g(ttl)} s ttl`;
  if (retries <= safe) return null;
  return (
    `renewFraction ${g(fraction)} renews ${g(renews)} s into a ${g(ttl)} s ttl and retries at ${g(retries)} s, past ` +
    `its safe end at ${g(safe)} s (the ttl less a margin of ${g(margin)} s): one unanswered renewal would lose it`
  );
}

/** One worker id of a pool, acquired by `WorkerLease.acquire`, renewed on an unref'd timer (it never holds the process
 * open), released by `close()`; a loss is for good: the "lost" event fires once, `worker` throws LeaseLost. */
export class WorkerLease extends EventEmitter<{ lost: [LeaseLost] }> {
  /** The monotonic time (seconds) until which the worker id is this process's, unless renewed before it. */
  safeEnd = 0;
  private wallSafeEndMs = 0;
  private renewAt = 0;
  private loss: LeaseLost | null = null;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private renewing: Promise<number | null> | null = null;
  private poolSize: number | null = null;

  private constructor(
    private readonly client: WorkerSource,
    readonly pool: string,
    /** The last grant or renewal, lost or not (for logs: `worker` is checked). */
    public grant: WorkerGrant,
    sent: Sent,
    private readonly margin: number | undefined,
    private readonly fraction: number,
    private readonly monotonic: () => number,
    private readonly wallClock: () => number,
  ) {
    super();
    this.extend(grant, sent);
  }

  /** Acquire a worker id of `pool` (throws PoolFull when every id is leased) and start renewing it. */
  static async acquire(client: WorkerSource, pool: string, options: WorkerLeaseOptions = {}): Promise<WorkerLease> {
    const { owner, idempotencyKey, marginSeconds: margin, renewFraction: fraction = DEFAULT_RENEW_FRACTION } = options;
    const { monotonic = monotonicSeconds, wallClock = Date.now } = options;
    const stamp = (): Sent => [monotonic(), wallClock()];
    if (!(fraction > 0 && fraction < 1)) throw new RangeError(`renewFraction must be between 0 and 1, got ${fraction}`);
    if (margin !== undefined && !(margin >= 0)) throw new RangeError(`marginSeconds must be 0 or more, got ${margin}`);
    const owned = owner !== undefined ? { owner } : {};
    let sent = stamp();
    let grant = await client.acquireWorker(pool, { ...owned, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) });
    if (idempotencyKey !== undefined) {
      sent = stamp();
      try {
        grant = await client.renewWorker(pool, grant.worker, grant.epoch);
      } catch (err) {
        if (!(err instanceof LeaseLost)) throw err;
        sent = stamp(); // the key's old grant, released or expired since: a fresh one, under a new key
        grant = await client.acquireWorker(pool, owned);
      }
    }
    const lease = new WorkerLease(client, pool, grant, sent, margin, fraction, monotonic, wallClock);
    const refused = renewalRefusal(grant.ttlSeconds, lease.marginSeconds, fraction);
    if (refused !== null) {
      // Unreleased, the id expires at its ttl: the refusal is the news, not a failed release.
      await client.releaseWorker(pool, grant.worker, grant.epoch).catch((err: unknown) => {
        if (!(err instanceof TicketsError)) throw err;
      });
      throw new RangeError(refused);
    }
    if (options.onLost) lease.on("lost", options.onLost);
    if (options.background ?? true) lease.schedule(lease.renewAt - sent[0]);
    return lease;
  }

  /** The worker id, while it is this process's: throws LeaseLost after a loss (an Error once closed). */
  get worker(): number {
    this.check();
    return this.grant.worker;
  }

  get epoch(): number {
    return this.grant.epoch;
  }

  get marginSeconds(): number {
    return this.margin ?? Math.max(MIN_MARGIN_SECONDS, MARGIN_FRACTION * this.grant.ttlSeconds);
  }

  get lost(): boolean {
    return this.noticeLoss() !== null;
  }

  /** The pool's size (read once, from `GET /_workers/{pool}`). */
  async size(): Promise<number> {
    this.poolSize ??= Number((await this.client.listWorkers(this.pool)).size);
    return this.poolSize;
  }

  /** Throws LeaseLost once the lease is lost, an Error once closed; else nothing (no network). */
  check(): void {
    if (this.closed) throw new Error("this WorkerLease is closed");
    const loss = this.noticeLoss();
    if (loss) throw loss;
  }

  /** Renew if a renewal is due; the seconds until the next is (null once lost or closed). Calls share one renewal. */
  renewDue(): Promise<number | null> {
    this.renewing ??= this.renewIfDue().finally(() => (this.renewing = null));
    return this.renewing;
  }

  /** Stop renewing and release the worker id; whether the service released it (false: lost, or the release failed). */
  async close(): Promise<boolean> {
    if (this.closed) return false;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.renewing;
    if (this.noticeLoss()) return false;
    const released = this.client.releaseWorker(this.pool, this.grant.worker, this.grant.epoch);
    return released.catch((err: unknown) => (err instanceof TicketsError ? false : Promise.reject(err)));
  }

  private async renewIfDue(): Promise<number | null> {
    if (this.closed || this.noticeLoss()) return null;
    const sent: Sent = [this.monotonic(), this.wallClock()];
    const now = sent[0];
    if (now < this.renewAt) return this.renewAt - now;
    const { worker, epoch, ttlSeconds } = this.grant;
    try {
      this.extend(await this.client.renewWorker(this.pool, worker, epoch), sent);
    } catch (err) {
      if (!(err instanceof TicketsError)) throw err;
      const status = err.status ?? 0;
      const refused = status >= 400 && status < 500 && status !== 429;
      if (err instanceof LeaseLost) this.lose(err);
      else if (refused) this.lose(new LeaseLost(err.status, err.code, `the renewal was refused: ${err.message}`));
      else this.renewAt = now + Math.min(RENEW_RETRY_SECONDS, this.fraction * ttlSeconds); // no answer: try again soon
    }
    return this.noticeLoss() || this.closed ? null : Math.max(0, this.renewAt - this.monotonic());
  }

  /** A grant or renewal answered to the request sent at `sent`: the new safe end, unless the old one has passed. */
  private extend(grant: WorkerGrant, [sent, sentWallMs]: Sent): void {
    if (grant.pool !== this.pool || grant.worker !== this.grant.worker || grant.epoch !== this.grant.epoch) {
      throw new TicketsError(200, "bad_response", `asked for a lease of ${this.pool}, got ${JSON.stringify(grant)}`);
    }
    if (this.noticeLoss()) return;
    this.grant = grant;
    this.safeEnd = sent + grant.ttlSeconds - this.marginSeconds;
    this.wallSafeEndMs = sentWallMs + (grant.ttlSeconds - this.marginSeconds) * 1000;
    this.renewAt = sent + this.fraction * grant.ttlSeconds;
  }

  private noticeLoss(): LeaseLost | null {
    const passed = this.monotonic() >= this.safeEnd || this.wallClock() >= this.wallSafeEndMs;
    if (this.loss === null && this.safeEnd > 0 && passed) {
      this.lose(new LeaseLost(null, "lease_lost", `the safe end of worker ${this.grant.worker} passed unrenewed`));
    }
    return this.loss;
  }

  private lose(loss: LeaseLost): void {
    if (this.loss !== null) return;
    this.loss = loss;
    if (this.timer) clearTimeout(this.timer);
    this.emit("lost", loss);
  }

  /** The next renewal on a timer that never holds the process open; it wakes at the safe end too, to report a loss. */
  private schedule(delay: number): void {
    const wait = Math.max(0, Math.min(delay, this.safeEnd - this.monotonic()));
    this.timer = setTimeout(async () => {
      const next = await this.renewDue().catch(() => RENEW_RETRY_SECONDS);
      if (next !== null && !this.closed) this.schedule(next);
    }, wait * 1000);
    this.timer.unref();
  }
}

export interface SnowflakeOptions {
  epochMs?: number;
  timeBits?: number;
  workerBits?: number;
  sequenceBits?: number;
  maxRollbackSeconds?: number;
  /** The wall clock in milliseconds since the Unix epoch (default Date.now). */
  clock?: () => number;
  sleep?: (seconds: number) => Promise<void>;
}

/** Snowflake-style ids (bigints) on a WorkerLease, the Python client's Snowflake; callers queue, one id at a time. */
export class Snowflake {
  private lastMs = -1;
  private sequence = 0;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(readonly lease: WorkerLease, private readonly settings: Required<SnowflakeOptions>) {}

  get epochMs(): number {
    return this.settings.epochMs;
  }

  /** A generator on `lease`, its layout checked: the bits fit 63, and the pool's size fits the worker bits. */
  static async on(lease: WorkerLease, options: SnowflakeOptions = {}): Promise<Snowflake> {
    const { timeBits = DEFAULT_TIME_BITS, workerBits = DEFAULT_WORKER_BITS, sequenceBits = DEFAULT_SEQUENCE_BITS } = options;
    const { maxRollbackSeconds = DEFAULT_MAX_ROLLBACK_SECONDS, epochMs = DEFAULT_EPOCH_MS } = options;
    const { clock = Date.now, sleep = (seconds: number) => sleepMs(seconds * 1000) } = options;
    const layout = { timeBits, workerBits, sequenceBits };
    if (!Object.values(layout).every((bits) => Number.isInteger(bits) && bits >= 0) || timeBits < 1) {
      throw new RangeError(`bit counts are whole numbers, timeBits at least 1: ${JSON.stringify(layout)}`);
    }
    if (timeBits + workerBits + sequenceBits > ID_BITS) {
      throw new RangeError(`${timeBits} + ${workerBits} + ${sequenceBits} bits do not fit ${ID_BITS}`);
    }
    if (!(maxRollbackSeconds >= 0)) throw new RangeError(`maxRollbackSeconds must be 0 or more, got ${maxRollbackSeconds}`);
    const size = await lease.size();
    if (size > 2 ** workerBits) throw new RangeError(`pool ${lease.pool} holds ${size} worker ids: more than ${workerBits} bits hold`);
    return new Snowflake(lease, { epochMs, timeBits, workerBits, sequenceBits, maxRollbackSeconds, clock, sleep });
  }

  next(): Promise<bigint> {
    const issued = this.queue.then(() => this.issue());
    this.queue = issued.catch(() => undefined);
    return issued;
  }

  private async issue(): Promise<bigint> {
    const { epochMs, timeBits, workerBits, sequenceBits, sleep } = this.settings;
    this.lease.check(); // the state changes only once an id is made: a throw midway leaves it as it was
    let now = await this.millisecond();
    let sequence = now === this.lastMs ? this.sequence + 1 : 0;
    while (sequence >= 2 ** sequenceBits) {
      await sleep(0.0005); // this millisecond's ids are used up: the next one
      if ((now = await this.millisecond()) > this.lastMs) sequence = 0;
    }
    const elapsed = now - epochMs;
    if (!(elapsed >= 0 && elapsed < 2 ** timeBits)) {
      throw new RangeError(`${now} ms is outside the ${2 ** timeBits} ms from epochMs ${epochMs}`);
    }
    const worker = this.lease.worker; // checked again after any wait
    [this.lastMs, this.sequence] = [now, sequence];
    return (BigInt(elapsed) << BigInt(workerBits + sequenceBits)) | (BigInt(worker) << BigInt(sequenceBits)) | BigInt(sequence);
  }

  /** Now in whole milliseconds, never before the last id's: a clock gone back is waited for up to the bound. */
  private async millisecond(): Promise<number> {
    const { clock, sleep, maxRollbackSeconds } = this.settings;
    let now = Math.floor(clock());
    while (now < this.lastMs) {
      const behind = this.lastMs - now;
      if (behind > maxRollbackSeconds * 1000) {
        const said = `the clock went back ${behind} ms, past maxRollbackSeconds (${maxRollbackSeconds * 1000} ms)`;
        throw new ClockRollback(null, "clock_rollback", said);
      }
      await sleep(behind / 1000);
      now = Math.floor(clock());
    }
    return now;
  }
}
