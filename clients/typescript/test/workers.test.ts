/** WorkerLease and Snowflake (src/workers.ts): on a manual clock and an in-memory pool that keeps the lease protocol's
 * rules (renewal timing, the safe end timed from the send, loss on a 409 and on a safe end passed by either clock,
 * release on close, a replayed grant released since, the bit layout, a clock gone back (also mid-wait), a
 * millisecond's sequence used up); then against the local server with a pool of 16: ids unique across 16 processes
 * whose leases expire and are granted again, a restart with its own key after a release, and a full pool's 503. */
import assert from "node:assert/strict";
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  ClockRollback,
  LeaseLost,
  PoolFull,
  Snowflake,
  TicketsClient,
  TicketsError,
  type WorkerGrant,
  WorkerLease,
  type WorkerLeaseOptions,
  type WorkerSource,
} from "../src/index.js";
import { type LocalTickets, startLocalTickets } from "../src/testing.js";
import { REPO, recordingSleep } from "./support.js";

const EPOCH_MS = 1_735_689_600_000;

/** A monotonic clock (seconds) and a wall clock (ms) that move together, only when told to or by a fake sleep. */
class Clocks {
  monotonicNow = 1000;
  wallMs = EPOCH_MS + 3_600_000;
  readonly slept: number[] = [];
  monotonic = (): number => this.monotonicNow;
  readonly wall = (): number => this.wallMs;
  readonly sleep = async (seconds: number): Promise<void> => {
    this.slept.push(seconds);
    this.advance(seconds);
  };

  advance(seconds: number): void {
    this.monotonicNow += seconds;
    this.wallMs += seconds * 1000;
  }
}

/** The lease protocol in memory on the monotonic clock: the lowest free id, epochs that grow, 409 for a stale renewal. */
class MemoryPool implements WorkerSource {
  readonly leases = new Map<number, { epoch: number; expiry: number }>();
  private readonly epochs = new Map<number, number>();
  readonly calls: [string, number][] = [];
  latency = 0;
  unreachable = false;
  readonly granted = new Map<string, WorkerGrant>(); // an Idempotency-Key's grant, replayed for the same key
  readonly keys: (string | undefined)[] = [];

  constructor(
    private readonly clocks: Clocks,
    readonly size = 4,
    readonly ttl = 30,
  ) {}

  names(): string[] {
    return this.calls.map(([name]) => name);
  }

  private call(name: string): number {
    this.calls.push([name, this.clocks.monotonic()]);
    this.clocks.advance(this.latency);
    if (this.unreachable) throw new TicketsError(null, "unreachable", "no answer");
    return this.clocks.monotonic();
  }

  private answer(worker: number): WorkerGrant {
    const { epoch, expiry } = this.leases.get(worker) as { epoch: number; expiry: number };
    return { pool: "pool", worker, epoch, expiresAt: Math.round(expiry * 1000), ttlSeconds: this.ttl };
  }

  async acquireWorker(_pool: string, options: { idempotencyKey?: string } = {}): Promise<WorkerGrant> {
    const now = this.call("acquire");
    this.keys.push(options.idempotencyKey);
    const replayed = this.granted.get(options.idempotencyKey ?? "");
    if (replayed) return replayed;
    const free = [...Array(this.size).keys()].filter((w) => (this.leases.get(w)?.expiry ?? 0) <= now);
    if (free.length === 0) {
      const earliest = Math.min(...[...this.leases.values()].map((lease) => lease.expiry));
      throw new PoolFull(503, "pool_full", "full", earliest - now);
    }
    const worker = free[0] as number;
    this.epochs.set(worker, (this.epochs.get(worker) ?? 0) + 1);
    this.leases.set(worker, { epoch: this.epochs.get(worker) as number, expiry: now + this.ttl });
    if (options.idempotencyKey !== undefined) this.granted.set(options.idempotencyKey, this.answer(worker));
    return this.answer(worker);
  }

  async renewWorker(_pool: string, worker: number, epoch: number): Promise<WorkerGrant> {
    const now = this.call("renew");
    const held = this.leases.get(worker);
    if (held?.epoch !== epoch || held.expiry <= now) throw new LeaseLost(409, "lease_lost", "expired or granted again");
    held.expiry = now + this.ttl;
    return this.answer(worker);
  }

  async releaseWorker(_pool: string, worker: number, epoch: number): Promise<boolean> {
    this.call("release");
    if (this.leases.get(worker)?.epoch !== epoch) return false;
    this.leases.delete(worker);
    return true;
  }

  async listWorkers(pool: string): Promise<Record<string, unknown>> {
    return { pool, size: this.size, ttlSeconds: this.ttl, leases: [] };
  }
}

function setUp(size = 4): { clocks: Clocks; pool: MemoryPool } {
  const clocks = new Clocks();
  return { clocks, pool: new MemoryPool(clocks, size) };
}

const leaseOn = (pool: MemoryPool, clocks: Clocks, options = {}): Promise<WorkerLease> =>
  WorkerLease.acquire(pool, "pool", { monotonic: clocks.monotonic, wallClock: clocks.wall, background: false, ...options });

const snowflakeOn = (lease: WorkerLease, clocks: Clocks, options = {}): Promise<Snowflake> =>
  Snowflake.on(lease, { clock: clocks.wall, sleep: clocks.sleep, ...options });

const isLoss = (err: unknown): boolean => err instanceof LeaseLost;

describe("WorkerLease", () => {
  test("renewals go out every third of the ttl, and the safe end counts from each send", async () => {
    const { clocks, pool } = setUp();
    const lease = await leaseOn(pool, clocks);
    const start = clocks.monotonic();
    assert.equal(lease.safeEnd, start + 30 - 3); // the margin: max(1 s, 10% of 30 s)
    assert.equal(await lease.renewDue(), 10);
    clocks.advance(9.5);
    assert.equal(await lease.renewDue(), 0.5);
    assert.deepEqual(pool.names(), ["acquire"]);
    clocks.advance(0.5);
    pool.latency = 2; // answered 2 s after it went out
    assert.equal(await lease.renewDue(), 8);
    assert.deepEqual(pool.calls.at(-1), ["renew", start + 10]);
    assert.equal(lease.safeEnd, start + 10 + 30 - 3);
  });

  test("a refused renewal loses the lease for good: event, callback, throwing getter, generator", async () => {
    const { clocks, pool } = setUp();
    const losses: LeaseLost[] = [];
    const events: LeaseLost[] = [];
    const lease = await leaseOn(pool, clocks, { onLost: (loss: LeaseLost) => losses.push(loss) });
    lease.on("lost", (loss) => events.push(loss));
    const ids = await snowflakeOn(lease, clocks);
    await ids.next();
    pool.leases.set(0, { epoch: lease.epoch + 1, expiry: clocks.monotonic() + 30 }); // expired unseen, granted again
    clocks.advance(10);
    assert.equal(await lease.renewDue(), null);
    assert.ok(lease.lost);
    assert.equal(losses.length, 1);
    assert.equal(losses[0]?.status, 409);
    assert.deepEqual(events, losses);
    assert.throws(() => lease.worker, isLoss);
    await assert.rejects(ids.next(), isLoss);
    assert.equal(await lease.close(), false);
    assert.deepEqual(pool.names(), ["acquire", "renew"]); // nothing renewed or released after the loss
  });

  test("renewals without answers lose the lease when the safe end passes", async () => {
    const { clocks, pool } = setUp();
    const losses: LeaseLost[] = [];
    const lease = await leaseOn(pool, clocks, { onLost: (loss: LeaseLost) => losses.push(loss) });
    const ids = await snowflakeOn(lease, clocks);
    pool.unreachable = true;
    clocks.advance(10);
    assert.equal(await lease.renewDue(), 1); // no answer: again in a second
    clocks.advance(16.5);
    assert.ok(!lease.lost);
    assert.ok((await ids.next()) > 0n);
    clocks.advance(0.5); // the safe end: 27 s after the acquire went out
    assert.ok(lease.lost);
    assert.equal(losses[0]?.code, "lease_lost");
    await assert.rejects(ids.next(), isLoss);
  });

  test("a renewal answered after the safe end does not revive the lease", async () => {
    const { clocks, pool } = setUp();
    const lease = await leaseOn(pool, clocks);
    clocks.advance(10);
    pool.latency = 20;
    assert.equal(await lease.renewDue(), null);
    assert.ok(lease.lost);
  });

  test("close releases the worker id, once", async () => {
    const { clocks, pool } = setUp();
    const lease = await leaseOn(pool, clocks);
    assert.equal(lease.worker, 0);
    assert.equal(await lease.close(), true);
    assert.equal(pool.leases.size, 0);
    assert.throws(() => lease.worker, /closed/);
    assert.equal(await lease.close(), false);
  });

  test("a full pool throws PoolFull with its Retry-After", async () => {
    const { clocks, pool } = setUp(1);
    await leaseOn(pool, clocks);
    clocks.advance(5);
    await assert.rejects(leaseOn(pool, clocks), (err: unknown) => err instanceof PoolFull && err.retryAfter === 25);
  });

  test("an own Idempotency-Key renews at once, so an old replayed grant is not trusted", async () => {
    const { clocks, pool } = setUp();
    await leaseOn(pool, clocks, { idempotencyKey: "order-service-7" });
    assert.deepEqual(pool.names(), ["acquire", "renew"]);
  });

  test("a replayed grant released since is replaced by a fresh acquire under a new key", async () => {
    const { clocks, pool } = setUp();
    const first = await leaseOn(pool, clocks, { idempotencyKey: "order-service-7" });
    await first.close();
    const again = await leaseOn(pool, clocks, { idempotencyKey: "order-service-7" }); // a restart: the old grant replayed
    assert.deepEqual(pool.names().slice(-3), ["acquire", "renew", "acquire"]);
    assert.deepEqual(pool.keys, ["order-service-7", "order-service-7", undefined]); // undefined: the client's own new key
    assert.ok(!again.lost && again.epoch > first.epoch);
    assert.equal(again.safeEnd, clocks.monotonic() + 27);
  });

  test("a suspend stops performance.now(), not the wall clock: either passing the safe end loses the lease", async () => {
    const { clocks, pool } = setUp();
    const lease = await leaseOn(pool, clocks);
    clocks.wallMs += 26_000; // suspended: the monotonic clock stood still
    assert.ok(!lease.lost);
    clocks.wallMs += 1000;
    assert.ok(lease.lost);
    assert.throws(() => lease.worker, isLoss);
    const stepped = await leaseOn(pool, clocks);
    clocks.wallMs -= 60_000; // a wall clock stepped back extends nothing
    clocks.monotonicNow += 27;
    assert.ok(stepped.lost);
  });

  test("impossible options are refused; a margin as long as the ttl releases the grant", async () => {
    const { clocks, pool } = setUp();
    for (const options of [{ renewFraction: 0 }, { renewFraction: 1 }, { marginSeconds: -1 }]) {
      await assert.rejects(leaseOn(pool, clocks, options), RangeError);
    }
    await assert.rejects(leaseOn(pool, clocks, { marginSeconds: 30 }), /margin/);
    assert.equal(pool.leases.size, 0);
  });

  test("a lease one unanswered renewal would lose is refused and its grant released", async () => {
    const { clocks, pool } = setUp(); // a 30 s ttl less the default 3 s margin is safe for 27 s; a retry comes 1 s later
    const refusals: [WorkerLeaseOptions, string][] = [
      [{ renewFraction: 0.9 }, "renews 27 s into a 30 s ttl and retries at 28 s, past its safe end at 27 s"],
      [{ renewFraction: 0.88 }, "retries at 27.4 s, past its safe end at 27 s"],
      [{ marginSeconds: 20 }, "renews 10 s into a 30 s ttl and retries at 11 s, past its safe end at 10 s"],
    ];
    for (const [options, refused] of refusals) {
      await assert.rejects(leaseOn(pool, clocks, options), (err: Error) => err instanceof RangeError && err.message.includes(refused));
      assert.equal(pool.leases.size, 0);
    }
    const kept = await leaseOn(pool, clocks, { renewFraction: 0.85 }); // its retry at 26.5 s
    assert.ok(Math.abs(((await kept.renewDue()) ?? 0) - 25.5) < 1e-9);
    pool.releaseWorker = async () => {
      throw new TicketsError(null, "unreachable", "no answer");
    };
    await assert.rejects(leaseOn(pool, clocks, { renewFraction: 0.95 }), /one unanswered renewal would lose it/);
  });

  test("the unref'd timer renews, then reports a loss (real time, a 1 s ttl)", async () => {
    const clocks = new Clocks();
    clocks.monotonic = () => 0; // the pool never expires a lease by itself here
    const pool = new MemoryPool(clocks, 4, 1);
    const lost = new Promise<LeaseLost>((resolve) => {
      void WorkerLease.acquire(pool, "pool", { marginSeconds: 0.2, onLost: resolve }).then(async (lease) => {
        await new Promise((done) => setTimeout(done, 1200));
        const renewals = pool.names().filter((name) => name === "renew").length;
        assert.ok(renewals >= 2 && renewals <= 5, `${renewals} renewals`);
        assert.ok(!lease.lost);
        pool.leases.clear();
      });
    });
    const holdOpen = setTimeout(() => {}, 10_000); // the lease's own timer is unref'd: it would let node exit
    try {
      assert.ok((await lost) instanceof LeaseLost);
    } finally {
      clearTimeout(holdOpen);
    }
  });
});

describe("Snowflake", () => {
  test("the default layout: 41 bits of milliseconds, 10 of worker, 12 of sequence", async () => {
    const { clocks, pool } = setUp();
    await leaseOn(pool, clocks);
    await leaseOn(pool, clocks);
    const ids = await snowflakeOn(await leaseOn(pool, clocks), clocks); // worker 2
    const first = await ids.next();
    assert.equal(first >> 22n, 3_600_000n);
    assert.equal((first >> 12n) & 1023n, 2n);
    assert.equal(first & 4095n, 0n);
    assert.equal(await ids.next(), first + 1n);
    clocks.advance(0.001);
    assert.equal(await ids.next(), first + (1n << 22n));
  });

  test("layouts that do not fit are refused", async () => {
    const { clocks, pool } = setUp();
    const lease = await leaseOn(pool, clocks);
    const layouts = [{ timeBits: 42 }, { workerBits: 1 }, { sequenceBits: -1 }, { timeBits: 0 }, { maxRollbackSeconds: -1 }];
    for (const layout of layouts) await assert.rejects(snowflakeOn(lease, clocks, layout), RangeError, JSON.stringify(layout));
  });

  test("a millisecond whose sequence is used up waits for the next", async () => {
    const { clocks, pool } = setUp();
    const ids = await snowflakeOn(await leaseOn(pool, clocks), clocks, { sequenceBits: 2 });
    const issued = await Promise.all(Array.from({ length: 9 }, () => ids.next())); // concurrent callers, one at a time
    assert.deepEqual(issued, [...new Set(issued)].sort((a, b) => (a < b ? -1 : 1)));
    assert.deepEqual(issued.map((id) => id & 3n), [0n, 1n, 2n, 3n, 0n, 1n, 2n, 3n, 0n]);
    assert.equal((issued[4] as bigint) >> 12n, ((issued[0] as bigint) >> 12n) + 1n);
    assert.ok(clocks.slept.length > 0);
  });

  test("a clock gone back within the bound is waited for", async () => {
    const { clocks, pool } = setUp();
    const ids = await snowflakeOn(await leaseOn(pool, clocks), clocks);
    const before = await ids.next();
    clocks.wallMs -= 500;
    assert.ok((await ids.next()) > before);
    assert.deepEqual(clocks.slept, [0.5]);
  });

  test("a clock gone back while waiting for the next millisecond never spills the sequence into the worker bits", async () => {
    const { clocks, pool } = setUp();
    const stuckMs = clocks.wallMs;
    const ids = await snowflakeOn(await leaseOn(pool, clocks), clocks, {
      sequenceBits: 2,
      sleep: async (seconds: number) => {
        clocks.slept.push(seconds);
        clocks.wallMs = clocks.slept.length === 1 ? stuckMs - 5000 : clocks.wallMs + seconds * 1000;
      },
    });
    const issued = [];
    for (let i = 0; i < 4; i++) issued.push(await ids.next()); // sequence 0..3: this millisecond's all
    await assert.rejects(ids.next(), ClockRollback); // the wait for the next one met a clock gone back 5 s
    clocks.wallMs = stuckMs; // back on the used-up millisecond
    issued.push(await ids.next(), await ids.next());
    assert.deepEqual(issued.map((id) => (id >> 2n) & 1023n), [0n, 0n, 0n, 0n, 0n, 0n]); // worker 0 throughout
    assert.equal(new Set(issued).size, 6);
    assert.equal((issued[4] as bigint) >> 12n, ((issued[0] as bigint) >> 12n) + 1n);
  });

  test("a clock gone back beyond the bound throws, and no id is ever repeated", async () => {
    const { clocks, pool } = setUp();
    const ids = await snowflakeOn(await leaseOn(pool, clocks), clocks);
    const issued = [await ids.next()];
    clocks.wallMs -= 5000;
    await assert.rejects(ids.next(), ClockRollback);
    assert.deepEqual(clocks.slept, []);
    clocks.wallMs += 4500;
    issued.push(await ids.next());
    clocks.wallMs += 500;
    issued.push(await ids.next());
    assert.ok((issued[0] as bigint) < (issued[1] as bigint) && (issued[1] as bigint) < (issued[2] as bigint));
  });
});

const TTL = 10; // the smallest ttl a pool may have (docs/reference/configuration.md)
const WORKERS_CONFIG = {
  regions: { "us-east-1": 0 },
  regionSlots: 1,
  strictKeys: false,
  workers: { shared: { size: 16, ttlSeconds: TTL }, single: { size: 1, ttlSeconds: TTL } },
};
const HOLDERS = 16;
const PAUSED = 4;
const RUN_SECONDS = 32;

interface Held {
  worker: number;
  epoch: number;
  ids: string[];
  lost: boolean;
  holder: number;
}

describe("against the local server (a pool of 16, ttl 10 s)", () => {
  let tickets: LocalTickets;
  before(async () => {
    const python = process.env.TICKETS_PYTHON ?? join(REPO, ".venv", "bin", "python");
    tickets = await startLocalTickets({ config: WORKERS_CONFIG, python });
  });
  after(async () => tickets.stop());

  test("the four methods: an Idempotency-Key's retry gets the same grant; renew, list, release, a stale epoch", async () => {
    const client = new TicketsClient(tickets.url);
    const idempotencyKey = `ts-restart-safe-${Date.now()}`;
    const grant = await client.acquireWorker("shared", { owner: "api-7", idempotencyKey });
    assert.deepEqual(await client.acquireWorker("shared", { owner: "api-7", idempotencyKey }), grant);
    assert.ok(grant.worker >= 0 && grant.worker < 16 && grant.epoch >= 1 && grant.ttlSeconds === TTL);
    const renewed = await client.renewWorker("shared", grant.worker, grant.epoch);
    assert.ok(renewed.epoch === grant.epoch && renewed.expiresAt >= grant.expiresAt);
    const listed = await client.listWorkers("shared");
    const mine = (listed.leases as { worker: number; owner: string }[]).find((lease) => lease.worker === grant.worker);
    assert.equal(listed.size, 16);
    assert.equal(mine?.owner, "api-7");
    await assert.rejects(client.renewWorker("shared", grant.worker, grant.epoch + 1), isLoss);
    assert.equal(await client.releaseWorker("shared", grant.worker, grant.epoch), true);
    assert.equal(await client.releaseWorker("shared", grant.worker, grant.epoch), false);
    await assert.rejects(client.renewWorker("shared", grant.worker, grant.epoch), isLoss);
  });

  test("a restart with its own Idempotency-Key after a release leases afresh (the replayed grant is refused)", async () => {
    const client = new TicketsClient(tickets.url);
    const options = { idempotencyKey: `ts-restart-${Date.now()}`, background: false };
    const first = await WorkerLease.acquire(client, "shared", options);
    await first.close();
    const again = await WorkerLease.acquire(client, "shared", options);
    assert.notDeepEqual([again.worker, again.epoch], [first.grant.worker, first.grant.epoch]);
    assert.ok(!again.lost);
    await again.close();
  });

  test("a full pool's 503 throws PoolFull with its Retry-After, not retried", async () => {
    const waits: number[] = [];
    const client = new TicketsClient(tickets.url, { sleep: recordingSleep(waits) });
    const lease = await WorkerLease.acquire(client, "single", { owner: "first" });
    try {
      await assert.rejects(client.acquireWorker("single"), (err: unknown) => {
        assert.ok(err instanceof PoolFull && err.status === 503 && err.code === "pool_full");
        assert.ok(err.retryAfter !== null && err.retryAfter >= 1 && err.retryAfter <= TTL, `${err.retryAfter}`);
        assert.match(err.message, new RegExp(`retry after ${err.retryAfter} s`));
        return true;
      });
      assert.deepEqual(waits, []);
    } finally {
      assert.equal(await lease.close(), true);
    }
    // Released, the id is granted again after the hand-over gap (the holders' margin), not at once.
    let gap = 0;
    await assert.rejects(client.acquireWorker("single"), (err: unknown) => {
      assert.ok(err instanceof PoolFull && err.retryAfter !== null);
      gap = err.retryAfter;
      return true;
    });
    await new Promise((resolve) => setTimeout(resolve, gap * 1000));
    assert.equal((await client.acquireWorker("single")).worker, 0);
  });

  test("Snowflake ids are unique across 16 processes whose leases expire (paused) and are granted again", async () => {
    const folder = mkdtempSync(join(tmpdir(), "tickets-holders-"));
    const holderScript = join(REPO, "clients", "typescript", "dist", "test", "worker-holder.js");
    const outputs = Array.from({ length: HOLDERS }, (_, index) => join(folder, `holder-${index}.json`));
    const go = join(folder, "go");
    const holders: ChildProcess[] = outputs.map((out, index) =>
      fork(holderScript, [tickets.url, out, String(index), String(RUN_SECONDS), ...(index < PAUSED ? [go] : [])], {
        stdio: "inherit",
      }),
    );
    const exits = holders.map((holder) => new Promise<number | null>((done) => holder.on("exit", (code) => done(code))));
    try {
      await Promise.all(holders.map((holder) => new Promise((leased) => holder.once("message", leased))));
      for (const holder of holders.slice(0, PAUSED)) holder.kill("SIGSTOP"); // past the ttl: their leases expire
      await new Promise((done) => setTimeout(done, (TTL + 3) * 1000));
      for (const holder of holders.slice(0, PAUSED)) holder.kill("SIGCONT");
      writeFileSync(go, "");
      assert.deepEqual(await Promise.all(exits), Array(HOLDERS).fill(0));
    } finally {
      for (const holder of holders) if (holder.exitCode === null) holder.kill("SIGKILL");
    }
    const leases: Held[] = outputs.flatMap((out, holder) =>
      (JSON.parse(readFileSync(out, "utf8")) as Omit<Held, "holder">[]).map((lease) => ({ ...lease, holder })),
    );
    const ids = leases.flatMap((lease) => lease.ids);
    assert.ok(ids.length > 10_000, `${ids.length} ids`);
    assert.equal(new Set(ids).size, ids.length, "an id was issued twice");
    const byWorker = new Map<number, Held[]>();
    for (const lease of leases) {
      assert.ok(lease.ids.every((id) => Number((BigInt(id) >> 12n) & 1023n) === lease.worker));
      byWorker.set(lease.worker, [...(byWorker.get(lease.worker) ?? []), lease]);
    }
    for (const [worker, held] of byWorker) {
      held.sort((a, b) => a.epoch - b.epoch);
      assert.equal(new Set(held.map((lease) => lease.epoch)).size, held.length, `worker ${worker}: an epoch granted twice`);
      const used = held.filter((lease) => lease.ids.length).map((lease) => lease.ids.map((id) => BigInt(id) >> 22n));
      const spans = used.map((ms) => [ms.reduce((a, b) => (a < b ? a : b)), ms.reduce((a, b) => (a > b ? a : b))]);
      spans.slice(1).forEach((span, i) => assert.ok((spans[i]?.[1] as bigint) < (span[0] as bigint), `worker ${worker}: overlap`));
    }
    const lost = leases.filter((lease) => lease.lost);
    assert.ok([...Array(PAUSED).keys()].every((holder) => lost.some((lease) => lease.holder === holder)), "every paused holder loses a lease");
    const regranted = lost.filter((lease) =>
      (byWorker.get(lease.worker) ?? []).some((other) => other.epoch > lease.epoch && other.holder !== lease.holder),
    );
    assert.ok(regranted.length > 0, "no lease of a paused holder was granted to another holder");
    console.log(`${ids.length} ids, ${leases.length} leases, ${lost.length} lost, ${regranted.length} granted to another holder after`);
  });
});
