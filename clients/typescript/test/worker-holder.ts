/** One holder of workers.test.ts's 16 (a process of its own, so the test can pause it): leases a worker id of
 * the pool "shared", takes Snowflake ids in bursts, closes and leases again every few seconds (so ids change hands),
 * leases again after a loss; tells its parent "leased" once it first holds one, and at the end writes what it held.
 * A holder the test will pause (given a go-file) keeps its first lease until that file exists: paused while it holds
 * one, whatever the machine's speed (between two leases it would lose nothing). */
import { existsSync, writeFileSync } from "node:fs";

import { LeaseLost, PoolFull, Snowflake, TicketsClient, WorkerLease } from "../src/index.js";

const [url, out, index, seconds, go] = process.argv.slice(2) as [string, string, string, string, string?];
const client = new TicketsClient(url, { timeoutSeconds: 10 });
const end = performance.now() + Number(seconds) * 1000;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const leases: { worker: number; epoch: number; ids: string[]; lost: boolean }[] = [];
while (performance.now() < end) {
  let lease: WorkerLease;
  try {
    lease = await WorkerLease.acquire(client, "shared", { owner: `ts-holder-${index}` });
  } catch (err) {
    if (!(err instanceof PoolFull)) throw err;
    await sleep((err.retryAfter ?? 1) * 1000);
    continue;
  }
  const held = { worker: lease.grant.worker, epoch: lease.grant.epoch, ids: [] as string[], lost: false };
  leases.push(held);
  if (leases.length === 1) process.send?.("leased");
  const ids = await Snowflake.on(lease);
  const until = performance.now() + 1000 + Math.random() * 3000;
  const hold = go !== undefined && leases.length === 1; // to be paused: hold the first lease until the pause is over
  try {
    while (performance.now() < end && (performance.now() < until || (hold && !existsSync(go)))) {
      for (let i = 0; i < 20; i++) held.ids.push(String(await ids.next()));
      await sleep(20);
    }
  } catch (err) {
    if (!(err instanceof LeaseLost)) throw err;
  }
  held.lost = lease.lost; // a holder resumed past its burst's end takes no id, so it asks
  await lease.close();
}
writeFileSync(out, JSON.stringify(leases));
process.exit(0);
