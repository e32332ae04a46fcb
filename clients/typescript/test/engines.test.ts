/** The Node these tests run on is the one the package's `engines` promises, and under make the very
 * release the Makefile pins (TICKETS_NODE_VERSION). */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { REPO } from "./support.js";

test("the tests run on a Node the package's engines allows, under make the pinned one", () => {
  const manifest = JSON.parse(readFileSync(join(REPO, "clients", "typescript", "package.json"), "utf8"));
  const lowest = /^>=(\d+)$/.exec(manifest.engines.node);
  assert.ok(lowest, `engines.node is not ">=N": ${manifest.engines.node}`);
  assert.ok(Number(process.versions.node.split(".")[0]) >= Number(lowest[1]), `${process.version} < ${manifest.engines.node}`);
  const pinned = process.env.TICKETS_NODE_VERSION;
  if (pinned !== undefined) assert.equal(process.version, `v${pinned}`);
});
