/** The test helper (`tickets-client/testing`): the local server in a process of its own, reset between
 * tests, stopped cleanly; and the package exports it under that name. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { TicketsClient, TicketsError } from "../src/index.js";
import { DEFAULT_CONFIG, type LocalTickets, startLocalTickets } from "../src/testing.js";
import { REPO } from "./support.js";

const PYTHON = process.env.TICKETS_PYTHON ?? `${REPO}/.venv/bin/python`;

describe("startLocalTickets", () => {
  let tickets: LocalTickets;
  before(async () => {
    tickets = await startLocalTickets({
      python: PYTHON,
      config: { regions: { "us-east-1": 0, "eu-west-1": 1 }, regionSlots: 2, counters: { orders: { start: 5000 } } },
      region: "eu-west-1",
    });
  });
  after(async () => tickets.stop());

  test("serves the given config and region", async () => {
    assert.match(tickets.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(tickets.banner, /eu-west-1 \(slot 1 of 2\)/);
    const client = new TicketsClient(tickets.url);
    await tickets.reset();
    assert.deepEqual(await client.next("orders", 2), [5001, 5003]); // slot 1's lane of two
  });

  test("reset() starts every counter again", async () => {
    const client = new TicketsClient(tickets.url);
    await client.next("orders", 3);
    await client.next("a-key");
    await tickets.reset();
    assert.deepEqual(await client.next("orders"), [5001]);
    assert.deepEqual(await client.next("a-key"), [2]);
  });
});

test("stop() ends the server: its URL no longer answers", async () => {
  const tickets = await startLocalTickets({ python: PYTHON });
  const client = new TicketsClient(tickets.url, { maxAttempts: 1 });
  assert.deepEqual(await client.next("k"), [1]); // DEFAULT_CONFIG: one lane, from 1
  await tickets.stop();
  await assert.rejects(client.next("k"), (err: unknown) => err instanceof TicketsError && err.code === "unreachable");
  await tickets.stop(); // a second stop does nothing
});

test("a bad config fails the start with the server's message", async () => {
  await assert.rejects(
    startLocalTickets({ python: PYTHON, config: { regions: { "us-east-1": 0 }, counters: { orders: { start: "x" } } } }),
    /exited \(1\) before it listened:[\s\S]*tickets\.counters\.orders\.start/,
  );
});

test("a Python without Tickets fails the start naming TICKETS_PYTHON and the install command", async () => {
  // A Python that cannot import tickets_local: -I -S, no site-packages and not the working directory.
  const bare = join(mkdtempSync(join(tmpdir(), "tickets-bare-")), "python");
  writeFileSync(bare, `#!/bin/sh\nexec ${PYTHON} -I -S "$@"\n`, { mode: 0o755 });
  await assert.rejects(startLocalTickets({ python: bare }), (err: unknown) => {
    const message = (err as Error).message;
    assert.match(message, /has no tickets_local/);
    assert.match(message, /TICKETS_PYTHON/);
    assert.match(message, /-m pip install "path\/to\/tickets\[testing\]"/);
    return true;
  });
});

test("the package exports the helper as tickets-client/testing", async () => {
  const name = "tickets-client/testing"; // resolved at run time through package.json's "exports"
  const exported = (await import(name)) as { startLocalTickets: unknown; DEFAULT_CONFIG: unknown };
  assert.equal(exported.startLocalTickets, startLocalTickets);
  assert.deepEqual(exported.DEFAULT_CONFIG, DEFAULT_CONFIG);
});

describe("an opaque counter (counters.KEY.opaque)", () => {
  const OPAQUE = { width: 10, alphabet: "digits", check: "luhn" };
  let tickets: LocalTickets;
  before(async () => {
    tickets = await startLocalTickets({
      python: PYTHON,
      config: { regions: { "us-east-1": 0 }, strictKeys: true, counters: { orders: { max: 99999999, opaque: OPAQUE } } },
    });
  });
  after(async () => tickets.stop());

  test("nextIds returns its ids, distinct 10-digit strings, and the key file they were made with", async () => {
    const client = new TicketsClient(tickets.url);
    const ids = [...(await client.nextIds("orders", 5)), ...(await client.nextIds("orders"))];
    assert.equal(ids.length, 6);
    assert.equal(new Set(ids).size, 6);
    for (const id of ids) assert.match(id, /^[0-9]{10}$/);
    assert.match(tickets.keyFile ?? "", /opaque-keys\.json$/);
  });

  test("next() refuses its answer, naming nextIds", async () => {
    const client = new TicketsClient(tickets.url);
    await assert.rejects(
      client.next("orders"),
      (err: unknown) => err instanceof TicketsError && err.code === "opaque_counter" && /nextIds/.test(err.message),
    );
  });

  test("a lease is refused at its first next(), with one request and the server's reason", async () => {
    const { TicketLease } = await import("../src/index.js");
    const requests: number[] = [];
    const client = new TicketsClient(tickets.url);
    const counting = {
      block: (key: string, count: number, options?: { idempotent?: boolean }) => {
        requests.push(count);
        return client.block(key, count, options);
      },
    };
    const lease = new TicketLease(counting, "orders");
    await assert.rejects(
      lease.next(),
      (err: unknown) =>
        err instanceof TicketsError && err.status === 400 && err.code === "opaque_counter" && /ids/.test(err.message),
    );
    assert.deepEqual(requests, [1000]); // not halved down to 1, as a maxBlock refusal would be
    await lease.close();
  });
});
