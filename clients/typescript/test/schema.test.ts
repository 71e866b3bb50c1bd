import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { FORMATS } from "@stowage/client";

import { PACKAGE_ROOT, REPO_ROOT } from "./support/server.js";

const run = promisify(execFile);

test("src/schema.ts is what openapi-typescript generates from server/openapi.json (run `npm run generate`)", async () => {
  const dir = await mkdtemp(join(tmpdir(), "stowage-schema-"));
  try {
    const out = join(dir, "schema.ts");
    const cli = join(PACKAGE_ROOT, "node_modules/openapi-typescript/bin/cli.js");
    await run(process.execPath, [cli, join(REPO_ROOT, "server/openapi.json"), "-o", out], { cwd: PACKAGE_ROOT });
    const fresh = await readFile(out, "utf8");
    const checkedIn = await readFile(join(PACKAGE_ROOT, "src/schema.ts"), "utf8");
    assert.ok(fresh === checkedIn, "src/schema.ts is stale: run `npm run generate` in clients/typescript and commit it");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("FORMATS lists exactly the formats the OpenAPI document offers", async () => {
  const doc = JSON.parse(await readFile(join(REPO_ROOT, "server/openapi.json"), "utf8")) as {
    components: { parameters: { Format: { schema: { enum: string[] } } } };
  };
  assert.deepEqual([...FORMATS], doc.components.parameters.Format.schema.enum);
});
