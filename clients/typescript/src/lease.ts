/** Block leasing, the Python client's TicketLease with the same sizing (docs/reference/clients.md). */
import { Block, MAX_BLOCK, type TicketsClient } from "./client.js";
import { TicketsError } from "./errors.js";

export const DEFAULT_BLOCK_SIZE = 1000;
export const DEFAULT_TARGET_SECONDS = 1.0;
export const PREFETCH_LATENCIES = 3; // prefetch when the block would last less than this many of the slowest fetches
const LATENCIES_KEPT = 4;
export const RUNS_PER_BLOCK = 16; // between two runs of a block the lease measures the rate and decides whether to prefetch

export type BlockSource = Pick<TicketsClient, "block">;

export interface LeaseOptions {
  blockSize?: number;
  maxBlock?: number;
  targetSeconds?: number;
  /** Seconds on a monotonic clock (tests pass a manual one). */
  clock?: () => number;
}

type Fetched = { block: Block; latency: number };

/** Any number of concurrent callers may share one lease; no ticket is handed out twice. */
export class TicketLease {
  readonly blockSize: number;
  readonly maxBlock: number;
  readonly targetSeconds: number;
  private readonly clock: () => number;
  private block = new Block(0, -1, 1, 0); // none yet
  private handed = 0; // tickets of the block handed out
  private released = 0; // tickets of the block released in runs (handed <= released <= count)
  private began = 0;
  private rate: number | null = null; // tickets per second, as last measured
  private readonly latencies: number[] = [];
  private readonly sizes = new Map<number, number>();
  private pending: Promise<Fetched> | null = null;
  private switching: Promise<void> | null = null; // the one move to the next block, which callers share
  private closed = false;
  private ceiling: number; // the largest size accepted after a refusal (fetches never overlap)

  constructor(
    private readonly client: BlockSource,
    readonly key: string,
    options: LeaseOptions = {},
  ) {
    const { maxBlock = MAX_BLOCK, blockSize = DEFAULT_BLOCK_SIZE, targetSeconds = DEFAULT_TARGET_SECONDS } = options;
    if (!key) throw new TypeError(`a lease needs a key (blocks come from /_blocks/{key}), got ${JSON.stringify(key)}`);
    if (!Number.isInteger(maxBlock) || maxBlock < 1 || maxBlock > MAX_BLOCK) {
      throw new RangeError(`maxBlock must be 1..${MAX_BLOCK}, got ${maxBlock}`);
    }
    if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > maxBlock) {
      throw new RangeError(`blockSize must be 1..maxBlock (${maxBlock}), got ${blockSize}`);
    }
    if (!(targetSeconds > 0)) throw new RangeError(`targetSeconds must be more than 0, got ${targetSeconds}`);
    this.blockSize = blockSize;
    this.maxBlock = maxBlock;
    this.targetSeconds = targetSeconds;
    this.ceiling = maxBlock;
    this.clock = options.clock ?? (() => performance.now() / 1000);
  }

  /** The next ticket; a failed prefetch rejects here, with its TicketsError, and the next call tries again. */
  async next(): Promise<number> {
    for (;;) {
      if (this.handed < this.block.count) {
        if (this.handed === this.released) this.releaseRun();
        return this.block.ticket(this.handed++);
      }
      if (this.closed) throw new Error("this TicketLease is closed");
      this.switching ??= this.nextBlock().finally(() => (this.switching = null));
      await this.switching;
    }
  }

  /** The size of the block being handed out (0 before the first and after close). */
  get currentBlockSize(): number {
    return this.block.count;
  }

  /** How many blocks of each size this lease has taken into use. */
  get blockSizes(): Map<number, number> {
    return new Map(this.sizes);
  }

  /** Stop prefetching, waiting for a fetch in flight; how many tickets are left unused (skipped). */
  async close(): Promise<number> {
    this.closed = true;
    await this.switching?.catch(() => {}); // a move to the next block under way lands first, and is counted
    let unused = this.block.count - this.handed;
    this.block = new Block(0, -1, 1, 0);
    this.handed = this.released = 0;
    const pending = this.pending;
    this.pending = null;
    return unused + ((await pending?.then(({ block }) => block.count, () => 0)) ?? 0); // a failed prefetch: nothing unused
  }

  /** The current run is used up, not the block: release its next run (the next block prefetched if due). */
  private releaseRun(): void {
    this.measureRate();
    const secondsLeft = this.rate === null ? Infinity : (this.block.count - this.released) / this.rate;
    if (this.pending === null && secondsLeft < PREFETCH_LATENCIES * Math.max(0, ...this.latencies)) {
      this.pending = this.fetch(this.nextSize());
      this.pending.catch(() => {}); // its failure is raised by the next() that needs the block, not as unhandled
    }
    this.released = Math.min(this.block.count, this.released + Math.ceil(this.block.count / RUNS_PER_BLOCK));
  }

  private async nextBlock(): Promise<void> {
    this.measureRate();
    const pending = this.pending;
    this.pending = null;
    const { block, latency } = await (pending ?? this.fetch(this.nextSize()));
    this.latencies.push(latency);
    if (this.latencies.length > LATENCIES_KEPT) this.latencies.shift();
    this.sizes.set(block.count, (this.sizes.get(block.count) ?? 0) + 1);
    this.block = block;
    this.handed = this.released = 0;
    this.began = this.clock();
  }

  /** Every ticket released so far from the current block has been handed out: the rate. */
  private measureRate(): void {
    const elapsed = this.clock() - this.began;
    if (this.released && elapsed > 0) this.rate = this.released / elapsed;
  }

  /** Double while a block lasts less than the target, halve past twice it; never above what the server accepts. */
  private nextSize(): number {
    let size = this.block.count || this.blockSize;
    if (this.rate !== null) {
      const lasts = size / this.rate;
      if (lasts < this.targetSeconds) size *= 2;
      else if (lasts > 2 * this.targetSeconds) size = Math.floor(size / 2);
    }
    return Math.min(Math.max(this.blockSize, size), this.ceiling);
  }

  /** A block and how long it took; no Idempotency-Key (a block a retry burns is a gap; a key, two more writes). */
  private async fetch(size: number): Promise<Fetched> {
    let refused = false;
    for (;;) {
      const began = this.clock();
      let block: Block;
      try {
        block = await this.client.block(this.key, size, { idempotent: false });
      } catch (err) {
        // maxBlock's 400 states its limit only in prose: halve until a block is accepted.
        if (err instanceof TicketsError && err.status === 400 && err.code !== "opaque_counter" && size > 1) {
          size = Math.floor(size / 2);
          refused = true;
          continue;
        }
        throw err;
      }
      if (refused) this.ceiling = size;
      return { block, latency: this.clock() - began };
    }
  }
}
