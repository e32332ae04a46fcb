/** TicketLease: range blocks sized adaptively, prefetched by time left, shrunk to a lowered maxBlock.
 * Sizing runs on a manual clock (no timing in tests); the lease against the local server runs over
 * real HTTP. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Block, type BlockSource, TicketLease, TicketsClient, TicketsError } from "../src/index.js";
import { type LocalServer, ManualClock, freshKey, localServer } from "./support.js";

/** Consecutive blocks from memory. `latency`: seconds each fetch takes on `clock`; `limit`: the
 * server's maxBlock (larger blocks are 400); `failCalls`: calls answered 503. */
class InMemoryBlocks implements BlockSource {
  readonly asked: number[] = [];
  private nextTicket = 1;

  constructor(
    public limit = 1_000_000,
    private readonly clock?: ManualClock,
    private readonly latency = 0,
    private readonly failCalls: number[] = [],
  ) {}

  async block(_key: string, count: number, options?: { idempotent?: boolean }): Promise<Block> {
    assert.equal(options?.idempotent, false, "a lease accepts gaps and sends no Idempotency-Key");
    this.asked.push(count);
    this.clock?.advance(this.latency);
    if (this.failCalls.includes(this.asked.length)) throw new TicketsError(503, "unavailable", "try later");
    if (count > this.limit) throw new TicketsError(400, "bad_request", `a block holds at most ${this.limit} tickets`);
    const block = new Block(this.nextTicket, this.nextTicket + count - 1, 1, count);
    this.nextTicket += count;
    return block;
  }
}

async function take(lease: TicketLease, count: number, clock?: ManualClock, secondsEach = 0): Promise<number[]> {
  const tickets: number[] = [];
  for (let i = 0; i < count; i++) {
    tickets.push(await lease.next());
    clock?.advance(secondsEach);
  }
  return tickets;
}

const range = (first: number, count: number): number[] => Array.from({ length: count }, (_, i) => first + i);

describe("sizing", () => {
  test("blocks double while used up faster than the target, and halve when they outlast twice it", async () => {
    const clock = new ManualClock();
    const source = new InMemoryBlocks(undefined, clock);
    const lease = new TicketLease(source, "k", { blockSize: 100, maxBlock: 1600, targetSeconds: 1, clock: clock.read });
    const handed: number[] = [];
    for (const size of [100, 200, 400, 800, 1600]) handed.push(...(await take(lease, size, clock, 1e-4)));
    for (const size of [1600, 800, 400, 200, 100, 100]) handed.push(...(await take(lease, size, clock, 0.012)));
    assert.deepEqual(source.asked, [100, 200, 400, 800, 1600, 1600, 800, 400, 200, 100, 100]);
    assert.deepEqual(handed, range(1, handed.length));
    assert.deepEqual(lease.blockSizes, new Map([[100, 3], [200, 2], [400, 2], [800, 2], [1600, 2]]));
    assert.equal(await lease.close(), 0);
  });

  test("after a deploy lowers maxBlock, the lease shrinks to what the server accepts and goes on", async () => {
    const clock = new ManualClock();
    const source = new InMemoryBlocks(undefined, clock);
    const lease = new TicketLease(source, "k", { blockSize: 1000, clock: clock.read });
    const grown = [0, 1, 2, 3, 4, 5, 6, 7].reduce((sum, n) => sum + 1000 * 2 ** n, 0); // 1,000 .. 128,000
    const handed = await take(lease, grown, clock, 1e-7);
    assert.equal(source.asked.at(-1), 128_000);
    source.limit = 20_000; // the deploy
    source.asked.length = 0;
    handed.push(...(await take(lease, 3 * 16_000, clock, 1e-7)));
    assert.deepEqual(source.asked, [256_000, 128_000, 64_000, 32_000, 16_000, 16_000, 16_000]);
    assert.deepEqual(handed, range(1, handed.length));
  });

  test("a block refused at every size raises the server's 400, and the sizes stay as they were", async () => {
    const source = new InMemoryBlocks(0);
    const lease = new TicketLease(source, "k", { blockSize: 100, clock: new ManualClock().read });
    await assert.rejects(lease.next(), (err: unknown) => err instanceof TicketsError && err.status === 400);
    assert.deepEqual(source.asked, [100, 50, 25, 12, 6, 3, 1]);
    source.limit = 1_000_000;
    assert.equal(await lease.next(), 1);
    assert.equal(source.asked.at(-1), 100);
  });

  test("impossible settings are refused", () => {
    const source = new InMemoryBlocks();
    for (const options of [{ blockSize: 0 }, { blockSize: 1001, maxBlock: 1000 }, { maxBlock: 1_000_001 }, { targetSeconds: 0 }]) {
      assert.throws(() => new TicketLease(source, "k", options), RangeError);
    }
    assert.throws(() => new TicketLease(source, ""), TypeError);
  });
});

describe("prefetch and sharing", () => {
  test("the next block is fetched in the background when the rest would last less than a few fetches", async () => {
    const clock = new ManualClock();
    const source = new InMemoryBlocks(undefined, clock, 0.0125); // every fetch takes 12.5 ms
    const lease = new TicketLease(source, "k", { blockSize: 160, targetSeconds: 1, clock: clock.read });
    // 1,000 tickets/s: the prefetch is due once fewer than 1000 * 3 * 0.0125 = 37.5 tickets are left;
    // the lease looks at the clock every 10 tickets (a sixteenth of the block).
    assert.deepEqual(await take(lease, 130, clock, 0.001), range(1, 130));
    assert.deepEqual(source.asked, [160]); // the run leaving 30 was released when 40 were left
    await lease.next(); // 30 left, 30 ms: fetched now, in the background
    assert.deepEqual(source.asked, [160, 320]); // 160 tickets lasted 0.16 s, under the 1 s target: double
    assert.equal((await take(lease, 29, clock, 0.001)).at(-1), 160);
    assert.equal(await lease.next(), 161); // the prefetched block
    assert.deepEqual(source.asked, [160, 320]);
    assert.equal(await lease.close(), 320 - 1);
  });

  test("a failed prefetch surfaces when its block is needed, then the lease recovers", async () => {
    const clock = new ManualClock();
    const source = new InMemoryBlocks(undefined, clock, 1, [2]);
    const lease = new TicketLease(source, "k", { blockSize: 4, clock: clock.read });
    assert.deepEqual(await take(lease, 4, clock, 0.1), [1, 2, 3, 4]); // the prefetch ran (and failed) meanwhile
    assert.equal(source.asked.length, 2);
    await assert.rejects(lease.next(), /try later/);
    assert.equal(await lease.next(), 5); // fetched afresh
    await lease.close();
  });

  test("concurrent callers never get one ticket twice", async () => {
    const lease = new TicketLease(new InMemoryBlocks(), "k", { blockSize: 64, clock: new ManualClock().read });
    const tickets = await Promise.all(Array.from({ length: 5000 }, () => lease.next()));
    assert.deepEqual([...tickets].sort((a, b) => a - b), range(1, 5000));
  });

  test("close counts what it skips, and a closed lease refuses", async () => {
    const lease = new TicketLease(new InMemoryBlocks(), "k", { blockSize: 100, clock: new ManualClock().read });
    assert.deepEqual(await take(lease, 30), range(1, 30));
    assert.equal(await lease.close(), 70);
    await assert.rejects(lease.next(), /closed/);
  });
});

describe("a lease against the local server", () => {
  let server: LocalServer;
  before(async () => {
    server = await localServer();
  });
  after(async () => server.stop());

  test("hands out distinct tickets from the blocks it took, the rest counted at close", async () => {
    const blocks: Block[] = [];
    const client = new TicketsClient(server.url);
    const recording: BlockSource = {
      block: async (key, count, options) => {
        const block = await client.block(key, count, options);
        blocks.push(block);
        return block;
      },
    };
    const key = freshKey("ts-lease");
    const lease = new TicketLease(recording, key, { blockSize: 10 });
    const tickets = await Promise.all(Array.from({ length: 500 }, () => lease.next()));
    const unused = await lease.close();
    assert.equal(new Set(tickets).size, 500);
    const issued = blocks.flatMap((block) => [...block.tickets()]);
    assert.ok(tickets.every((ticket) => issued.includes(ticket)));
    assert.equal(unused, issued.length - tickets.length);
    assert.equal((await client.state(key)).last, Math.max(...issued));
  });

  test("on a key whose blocks the server limits (maxBlock 300), the lease shrinks to what it accepts", async (t) => {
    if (!server.ownConfig) return t.skip("needs the tests' own server config (TICKETS_URL is set)");
    const client = new TicketsClient(server.url);
    const asked: number[] = [];
    const recording: BlockSource = {
      block: async (key, count, options) => {
        asked.push(count);
        return client.block(key, count, options);
      },
    };
    const clock = new ManualClock(); // 0.1 ms a ticket: each block is used up fast, so the next doubles
    const lease = new TicketLease(recording, "small-blocks", { blockSize: 200, clock: clock.read });
    assert.deepEqual(await take(lease, 500, clock, 1e-4), range(1, 500)); // a refused block issues nothing
    assert.deepEqual(asked, [200, 400, 200, 200]); // the server's 400 for 400 tickets, then 200 again
    assert.equal(await lease.close(), 100);
  });
});
