import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { StowageClient, isStowageError, type DisplayRecord } from "@stowage/client";

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

describe("display persistence", () => {
  test("save message splits parts into records; tool calls become pending cards", async () => {
    const id = uniqueId("display");
    await client.openConversation(id);
    const records = await client.saveDisplayMessage(
      id,
      {
        id: "m-1",
        role: "assistant",
        parts: [
          { type: "text", text: "Let me check." },
          { type: "tool_call", id: "call-1", name: "weather", arguments: '{"city":"Paris"}' },
        ],
        stop_reason: "tool_use",
      },
      { agentId: "planner" },
    );
    assert.equal(records.length, 2);
    const [textRecord, card] = records as [DisplayRecord, DisplayRecord];
    assert.equal(textRecord.content_type, "text");
    assert.deepEqual(textRecord.content, { text: "Let me check." });
    assert.equal(textRecord.message_id, "m-1");
    assert.equal(textRecord.message_type, "assistant");
    assert.deepEqual(textRecord.scope, { tenant: "acme", user: "" });
    assert.equal(card.content_type, "tool_call");
    assert.equal(card.tool_call_id, "call-1");
    assert.equal(card.status, "pending");
    assert.deepEqual(card.content, { name: "weather", arguments: '{"city":"Paris"}' });
    assert.equal(card.seq, textRecord.seq + 1);

    const page = await client.listDisplay(id);
    assert.deepEqual(page.records, records);
    assert.equal(page.next_after, null);
  });

  test("synthetic records carry any JSON content and object metadata", async () => {
    const id = uniqueId("synthetic");
    const record = await client.saveSynthetic(id, {
      message_type: "system",
      content_type: "ask_user_answer",
      content: { answer: "yes", n: [1, 2.5] },
      metadata: { source: "form" },
      agent_id: "planner",
    });
    assert.equal(record.message_type, "system");
    assert.equal(record.content_type, "ask_user_answer");
    assert.deepEqual(record.content, { answer: "yes", n: [1, 2.5] });
    assert.deepEqual(record.metadata, { source: "form" });
    assert.equal(record.seq, 1);
    await assert.rejects(
      client.saveSynthetic(id, { message_type: "", content_type: "x", content: 1 }),
      (error) => isStowageError(error, "invalid_input") && error.status === 400,
    );
  });

  test("tool status lifecycle: transitions, repeats, refusals, unknown calls; resolving interrupted cards", async () => {
    const id = uniqueId("tools");
    await client.saveDisplayMessage(id, {
      role: "assistant",
      parts: [
        { type: "tool_call", id: "call-a", name: "search", arguments: "{}" },
        { type: "tool_call", id: "call-b", name: "fetch", arguments: "{}" },
      ],
    });
    const executing = await client.updateToolStatus(id, "call-a", "executing", {
      display_text: "Searching…",
      metadata: { progress: 0.5 },
    });
    assert.equal(executing.changed, true);
    assert.equal(executing.card.status, "executing");
    assert.deepEqual(executing.card.metadata, { display_text: "Searching…", progress: 0.5 });

    const repeat = await client.updateToolStatus(id, "call-a", "executing");
    assert.equal(repeat.changed, false);

    const done = await client.updateToolStatus(id, "call-a", "completed", { result: "3 hits" });
    assert.equal(done.card.status, "completed");
    assert.equal((done.card.metadata as Record<string, unknown>).result, "3 hits");

    await assert.rejects(client.updateToolStatus(id, "call-a", "pending"), (error) => {
      assert.ok(isStowageError(error, "invalid_transition"));
      assert.equal(error.status, 409);
      assert.deepEqual(error.details, { from: "completed", to: "pending" });
      return true;
    });
    await assert.rejects(client.updateToolStatus(id, "no-such-call", "executing"), { code: "not_found", status: 404 });

    // An interrupted card gets its real result later.
    await client.updateToolStatus(id, "call-b", "executing");
    await client.updateToolStatus(id, "call-b", "interrupted", { error: "process restarted" });
    const resolved = await client.resolveToolResult(id, "call-b", "page body", { agentId: "planner" });
    assert.equal(resolved.changed, true);
    assert.equal(resolved.card.status, "completed");
    assert.equal((resolved.card.metadata as Record<string, unknown>).result, "page body");
    const again = await client.resolveToolResult(id, "call-b", "page body");
    assert.equal(again.changed, false);
    await assert.rejects(client.resolveToolResult(id, "missing", "x"), { code: "not_found" });
  });

  test("restore takes exported records as they are; paging walks them all", async () => {
    const source = uniqueId("export");
    for (let i = 0; i < 5; i++) {
      await client.saveDisplayMessage(source, { role: "user", parts: [{ type: "text", text: `r${i}` }] });
    }
    const first = await client.listDisplay(source, { limit: 2 });
    assert.equal(first.records.length, 2);
    assert.equal(first.next_after, first.records[1]?.seq);
    const second = await client.listDisplay(source, { limit: 2, after: first.next_after ?? 0 });
    assert.deepEqual(second.records.map((r) => r.seq), [3, 4]);

    const exported: DisplayRecord[] = [];
    for await (const record of client.displayRecords(source, { limit: 2 })) exported.push(record);
    assert.equal(exported.length, 5);

    const target = uniqueId("import");
    await client.saveSynthetic(target, { message_type: "system", content_type: "note", content: "before import" });
    const restored = await client.restoreDisplay(target, exported);
    assert.deepEqual(restored.map((r) => r.seq), [2, 3, 4, 5, 6], "numbered after the last record");
    for (const [i, record] of restored.entries()) {
      const original = exported[i] as DisplayRecord;
      assert.equal(record.conversation_id, target);
      assert.deepEqual(record.content, original.content);
      assert.equal(record.created_at, original.created_at);
      assert.equal(record.updated_at, original.updated_at);
    }
  });

  test("deleting a conversation removes its display records", async () => {
    const id = uniqueId("display-delete");
    await client.openConversation(id);
    await client.saveSynthetic(id, { message_type: "system", content_type: "note", content: "x" });
    assert.equal(await client.deleteConversation(id), true);
    assert.deepEqual((await client.listDisplay(id)).records, []);
  });
});
