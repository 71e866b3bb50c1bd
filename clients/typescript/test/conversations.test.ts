import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { StowageClient, type ConversationInfo } from "@stowage/client";

import { startServer, uniqueId, type TestServer } from "./support/server.js";

let server: TestServer;
let client: StowageClient;

before(async () => {
  server = await startServer();
  client = server.client();
});
after(async () => {
  await server?.stop();
});

describe("health and document", () => {
  test("health answers without a token", async () => {
    const anonymous = new StowageClient({ baseUrl: server.url });
    const health = await anonymous.health();
    assert.equal(health.status, "ok");
    assert.equal(health.store, "main");
    assert.ok(["healthy", "degraded"].includes(health.adapter.status));
    assert.equal(typeof health.contract_version, "string");
  });

  test("the served OpenAPI document is the checked-in one the types were generated from", async () => {
    const { readFile } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const { REPO_ROOT } = await import("./support/server.js");
    const checkedIn = JSON.parse(await readFile(join(REPO_ROOT, "server/openapi.json"), "utf8")) as unknown;
    assert.deepEqual(await client.openapi(), checkedIn);
  });
});

describe("conversations", () => {
  test("open creates with meta, is idempotent, and info reads it back", async () => {
    const id = uniqueId("open");
    const meta = { title: "Trip planning", agent_id: "planner", metadata: { channel: "web", n: 1.5 }, extra: { k: [1, 2] } };
    const created = await client.openConversation(id, meta);
    assert.equal(created.id, id);
    assert.deepEqual(created.scope, { tenant: "acme", user: "" });
    assert.equal(created.title, "Trip planning");
    assert.equal(created.agent_id, "planner");
    assert.deepEqual(created.metadata, { channel: "web", n: 1.5 });
    assert.deepEqual(created.extra, { k: [1, 2] });
    assert.equal(created.message_count, 0);
    assert.equal(created.last_seq, 0);
    assert.equal(typeof created.version, "number");

    // Open again with other meta: the existing conversation, unchanged.
    const again = await client.openConversation(id, { title: "ignored" });
    assert.equal(again.title, "Trip planning");
    assert.equal(again.created_at, created.created_at);

    const info = await client.getConversation(id);
    assert.deepEqual(info, again);
    assert.deepEqual(await client.findConversation(id), info);
  });

  test("update changes only the members given; null clears one; a missing conversation is 404", async () => {
    const id = uniqueId("update");
    await assert.rejects(client.updateConversation(id, { title: "x" }), {
      name: "StowageError",
      code: "not_found",
      status: 404,
    });
    const created = await client.openConversation(id, {
      title: "Trip",
      agent_id: "planner",
      metadata: { channel: "web" },
      extra: { myapp: { x: 1 } },
    });
    await client.append(id, [{ role: "user", parts: [{ type: "text", text: "hi" }] }]);
    const before = await client.getConversation(id);

    const renamed = await client.updateConversation(id, { title: "Paris in June" });
    assert.equal(renamed.title, "Paris in June");
    assert.equal(renamed.agent_id, "planner");
    assert.deepEqual(renamed.metadata, { channel: "web" });
    assert.deepEqual(renamed.extra, { myapp: { x: 1 } });
    assert.equal(renamed.version, before.version);
    assert.equal(renamed.message_count, 1);
    assert.equal(renamed.updated_at, before.updated_at);
    assert.equal(renamed.created_at, created.created_at);
    assert.deepEqual(await client.getConversation(id), renamed);

    const cleared = await client.updateConversation(id, { agent_id: null, metadata: { n: [2.5] } });
    assert.equal(cleared.agent_id, undefined);
    assert.equal(cleared.title, "Paris in June");
    assert.deepEqual(cleared.metadata, { n: [2.5] });
    assert.deepEqual(await client.updateConversation(id, {}), cleared);

    await assert.rejects(
      client.updateConversation(id, { extra: [1] as unknown as Record<string, unknown> }),
      { name: "StowageError", code: "invalid_input", status: 400 },
    );
    await assert.rejects(
      client.updateConversation(id, { titel: "x" } as unknown as { title: string }),
      (error: unknown) => {
        const e = error as import("@stowage/client").StowageError;
        assert.equal(e.code, "invalid_json");
        assert.match(e.message, /titel/);
        return true;
      },
    );
    assert.deepEqual(await client.getConversation(id), cleared);
  });

  test("open without meta sends an empty body", async () => {
    const id = uniqueId("bare");
    const info = await client.openConversation(id);
    assert.equal(info.id, id);
    assert.equal(info.title, undefined);
  });

  test("ids with slashes, spaces, percent signs and non-ASCII are percent-encoded", async () => {
    const id = `weird/${uniqueId("id")} ?#%é✓`;
    const info = await client.openConversation(id, { title: "weird" });
    assert.equal(info.id, id);
    assert.equal((await client.getConversation(id)).title, "weird");
    await client.append(id, [{ role: "user", parts: [{ type: "text", text: "x" }] }]);
    assert.equal((await client.loadAll(id)).messages.length, 1);
    assert.equal(await client.deleteConversation(id), true);
  });

  test("delete removes, then answers false; info is then 404 and find null", async () => {
    const id = uniqueId("delete");
    await client.openConversation(id);
    await client.append(id, [{ role: "user", parts: [{ type: "text", text: "bye" }] }]);
    assert.equal(await client.deleteConversation(id), true);
    assert.equal(await client.deleteConversation(id), false);
    assert.equal(await client.findConversation(id), null);
    await assert.rejects(client.getConversation(id), { name: "StowageError", code: "not_found", status: 404 });
  });

  test("list pages by cursor, ordered by id, and the iterator walks every page", async () => {
    // Its own user, so the listing holds only these.
    const scoped = client.withUser(uniqueId("lister"));
    const ids = ["c-05", "c-01", "c-04", "c-02", "c-03"];
    for (const id of ids) await scoped.openConversation(id, { title: id });
    const first = await scoped.listConversations({ limit: 2 });
    assert.deepEqual(first.conversations.map((c) => c.id), ["c-01", "c-02"]);
    assert.equal(typeof first.next_cursor, "string");
    const second = await scoped.listConversations({ limit: 2, cursor: first.next_cursor ?? undefined });
    assert.deepEqual(second.conversations.map((c) => c.id), ["c-03", "c-04"]);
    const third = await scoped.listConversations({ limit: 2, cursor: second.next_cursor ?? undefined });
    assert.deepEqual(third.conversations.map((c) => c.id), ["c-05"]);
    assert.equal(third.next_cursor, null);

    const all: ConversationInfo[] = [];
    for await (const info of scoped.conversations({ limit: 2 })) all.push(info);
    assert.deepEqual(all.map((c) => c.id), [...ids].sort());
    assert.ok(all.every((c) => c.scope.user === scoped.user));
  });

  test("an invalid cursor is 400 invalid_cursor", async () => {
    await assert.rejects(client.listConversations({ cursor: "not-a-cursor" }), (error: unknown) => {
      assert.ok(error instanceof Error && error.name === "StowageError");
      const e = error as import("@stowage/client").StowageError;
      assert.equal(e.status, 400);
      assert.ok(e.code === "invalid_cursor" || e.code === "invalid_input", e.code);
      return true;
    });
  });
});
