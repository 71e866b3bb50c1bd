import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { StowageClient, isStowageError, type Message, type NewMessage } from "@stowage/client";

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

const text = (role: NewMessage["role"], body: string, id?: string): NewMessage => ({
  ...(id === undefined ? {} : { id }),
  role,
  parts: [{ type: "text", text: body }],
});

const texts = (messages: Message[]): string[] =>
  messages.map((m) => (m.parts[0]?.type === "text" ? m.parts[0].text : `<${m.parts[0]?.type}>`));

async function seeded(n: number): Promise<string> {
  const id = uniqueId("seeded");
  const batch = Array.from({ length: n }, (_, i) => text(i % 2 ? "assistant" : "user", `m${i + 1}`, `id-${i + 1}`));
  const outcome = await client.append(id, batch, { createIfMissing: true });
  assert.deepEqual(outcome.seqs, Array.from({ length: n }, (_, i) => i + 1));
  return id;
}

describe("append", () => {
  test("append with create_if_missing creates with meta and stores every part kind", async () => {
    const id = uniqueId("append");
    const batch: NewMessage[] = [
      { role: "system", parts: [{ type: "text", text: "be brief" }] },
      { id: "u1", role: "user", parts: [{ type: "text", text: "weather in Paris?" }], metadata: { ui: { pinned: true } } },
      {
        id: "a1",
        role: "assistant",
        parts: [
          { type: "thinking", text: "need a tool", signature: "sig-1" },
          { type: "tool_call", id: "call-1", name: "weather", arguments: '{"city":"Paris"}' },
        ],
        stop_reason: "tool_use",
        usage: { input_tokens: 10, output_tokens: 5, cached_tokens: 0, cost: 0.25 },
      },
      { id: "t1", role: "tool", parts: [{ type: "tool_result", call_id: "call-1", content: "18°C", is_error: true }] },
      {
        id: "u2",
        role: "user",
        parts: [
          { type: "media", mime_type: "image/png", source: { inline: [137, 80, 78, 71] }, name: "p.png" },
          { type: "media", mime_type: "image/jpeg", source: { url: "https://example.com/x.jpg" } },
          { type: "provider", format: "anthropic", value: { type: "search_result", n: 1 } },
        ],
      },
    ];
    const outcome = await client.append(id, batch, { createIfMissing: true, meta: { title: "Paris", agent_id: "bot" } });
    assert.equal(outcome.stored, 5);
    assert.deepEqual(outcome.seqs, [1, 2, 3, 4, 5]);
    assert.equal(outcome.ids.length, 5);
    assert.deepEqual(outcome.ids.slice(1), ["u1", "a1", "t1", "u2"]);
    assert.match(outcome.ids[0] ?? "", /^idem-[0-9a-f]{32}-0$/, "the client's automatic Idempotency-Key derives the id");

    const info = await client.getConversation(id);
    assert.equal(info.title, "Paris");
    assert.equal(info.agent_id, "bot");
    assert.equal(info.message_count, 5);
    assert.equal(info.last_seq, 5);
    assert.equal(info.version, outcome.version);

    const { messages } = await client.loadAll(id);
    assert.deepEqual(messages.map((m) => m.seq), [1, 2, 3, 4, 5]);
    assert.deepEqual(messages.map((m) => m.id), outcome.ids);
    assert.deepEqual(messages[1]?.metadata, { ui: { pinned: true } });
    assert.deepEqual(messages[2]?.parts, batch[2]?.parts);
    assert.equal(messages[2]?.stop_reason, "tool_use");
    assert.deepEqual(messages[2]?.usage, { input_tokens: 10, output_tokens: 5, cached_tokens: 0, cost: 0.25 });
    assert.deepEqual(messages[3]?.parts, batch[3]?.parts);
    assert.deepEqual(messages[4]?.parts, batch[4]?.parts);
    assert.ok(messages.every((m) => typeof m.created_at === "number"));
  });

  test("append to a missing conversation is 404 without create_if_missing", async () => {
    await assert.rejects(client.append(uniqueId("missing"), [text("user", "x")]), {
      code: "not_found",
      status: 404,
    });
  });

  test("appends are idempotent by message id and by Idempotency-Key", async () => {
    const id = uniqueId("idem");
    await client.openConversation(id);
    const first = await client.append(id, [text("user", "a", "fixed-1"), text("assistant", "b", "fixed-2")]);
    const retry = await client.append(id, [text("user", "a", "fixed-1"), text("assistant", "b", "fixed-2")]);
    assert.equal(first.stored, 2);
    assert.equal(retry.stored, 0);
    assert.deepEqual(retry.seqs, first.seqs);

    const keyed = [text("user", "no id"), text("assistant", "no id either")];
    const k1 = await client.append(id, keyed, { idempotencyKey: "turn-7" });
    const k2 = await client.append(id, keyed, { idempotencyKey: "turn-7" });
    assert.equal(k1.stored, 2);
    assert.equal(k2.stored, 0);
    assert.deepEqual(k2.ids, k1.ids);
    assert.deepEqual(k2.seqs, [3, 4]);
    assert.match(k1.ids[0] ?? "", /^idem-[0-9a-f]{32}-0$/);
    assert.equal((await client.getConversation(id)).message_count, 4);
  });

  test("an invalid Idempotency-Key is 400 invalid_idempotency_key", async () => {
    const id = uniqueId("badkey");
    await client.openConversation(id);
    await assert.rejects(client.append(id, [text("user", "x")], { idempotencyKey: "has space" }), {
      code: "invalid_idempotency_key",
      status: 400,
    });
  });

  test("expected_version guards appends (409 conflict with details)", async () => {
    const id = uniqueId("version");
    const info = await client.openConversation(id);
    const ok = await client.append(id, [text("user", "one", "v1")], { expectedVersion: info.version });
    await assert.rejects(client.append(id, [text("user", "two", "v2")], { expectedVersion: info.version }), (error) => {
      assert.ok(isStowageError(error, "conflict"));
      assert.equal(error.status, 409);
      assert.deepEqual(error.details, { expected: info.version, actual: ok.version });
      return true;
    });
  });

  test("create_if_missing with expected_version is refused (400)", async () => {
    await assert.rejects(
      client.append(uniqueId("both"), [text("user", "x")], { createIfMissing: true, expectedVersion: 0 }),
      { code: "invalid_input", status: 400 },
    );
  });

  test("a malformed message is 400 naming the field", async () => {
    const id = uniqueId("malformed");
    await client.openConversation(id);
    const bad = { role: "robot", parts: [] } as unknown as NewMessage;
    await assert.rejects(client.append(id, [bad]), (error) => {
      assert.ok(isStowageError(error, "invalid_json"));
      assert.equal(error.status, 400);
      assert.match(error.serverMessage, /^messages\[0\]/);
      return true;
    });
  });
});

describe("replace, truncate, pop", () => {
  test("replace renumbers from 1 and honours expected_version", async () => {
    const id = await seeded(4);
    const before = await client.getConversation(id);
    const replaced = await client.replace(id, [text("user", "fresh", "r1"), text("assistant", "start", "r2")], {
      expectedVersion: before.version,
    });
    assert.ok(replaced.version > before.version);
    const { messages } = await client.loadAll(id);
    assert.deepEqual(messages.map((m) => [m.seq, m.id]), [[1, "r1"], [2, "r2"]]);
    await assert.rejects(client.replace(id, [], { expectedVersion: before.version }), { code: "conflict", status: 409 });
    await assert.rejects(client.replace(uniqueId("nope"), []), { code: "not_found", status: 404 });
  });

  test("truncate removes after a seq; after=0 empties", async () => {
    const id = await seeded(5);
    const cut = await client.truncate(id, 3);
    assert.equal(cut.removed, 2);
    assert.deepEqual(texts((await client.loadAll(id)).messages), ["m1", "m2", "m3"]);
    await assert.rejects(client.truncate(id, 0, { expectedVersion: cut.version - 1 }), { code: "conflict" });
    const emptied = await client.truncate(id, 0, { expectedVersion: cut.version });
    assert.equal(emptied.removed, 3);
    assert.equal((await client.getConversation(id)).message_count, 0);
  });

  test("pop removes and returns the newest, then null when empty", async () => {
    const id = await seeded(2);
    const popped = await client.pop(id);
    assert.equal(popped.message?.id, "id-2");
    assert.equal(popped.message?.seq, 2);
    assert.equal((await client.pop(id)).message?.id, "id-1");
    assert.equal((await client.pop(id)).message, null);
    await assert.rejects(client.pop(uniqueId("nothing")), { code: "not_found" });
  });
});

describe("load with paging and ranges", () => {
  test("latest page, then older pages by cursor; ascending within a page", async () => {
    const id = await seeded(7);
    const latest = await client.load(id, { limit: 3 });
    assert.deepEqual(texts(latest.messages), ["m5", "m6", "m7"]);
    assert.equal(typeof latest.next_cursor, "string");
    const older = await client.load(id, { limit: 3, cursor: latest.next_cursor ?? undefined });
    assert.deepEqual(texts(older.messages), ["m2", "m3", "m4"]);
    const oldest = await client.load(id, { limit: 3, cursor: older.next_cursor ?? undefined });
    assert.deepEqual(texts(oldest.messages), ["m1"]);
    assert.equal(oldest.next_cursor, null);

    const seen: string[][] = [];
    for await (const page of client.pages(id, { limit: 3 })) seen.push(texts(page.messages));
    assert.deepEqual(seen, [["m5", "m6", "m7"], ["m2", "m3", "m4"], ["m1"]]);
  });

  test("after walks forward, before walks back", async () => {
    const id = await seeded(6);
    const forward = await client.load(id, { after: 2, limit: 2 });
    assert.deepEqual(texts(forward.messages), ["m3", "m4"]);
    const next = await client.load(id, { cursor: forward.next_cursor ?? undefined, limit: 2 });
    assert.deepEqual(texts(next.messages), ["m5", "m6"]);

    const back = await client.load(id, { before: 4, limit: 2 });
    assert.deepEqual(texts(back.messages), ["m2", "m3"]);

    const pages: string[][] = [];
    for await (const page of client.pages(id, { after: 0, limit: 4 })) pages.push(texts(page.messages));
    assert.deepEqual(pages.flat(), ["m1", "m2", "m3", "m4", "m5", "m6"]);
  });

  test("two range selectors at once are 400; a missing conversation 404", async () => {
    const id = await seeded(1);
    await assert.rejects(client.load(id, { after: 1, before: 3 }), { code: "invalid_input", status: 400 });
    await assert.rejects(client.load(uniqueId("nope")), { code: "not_found", status: 404 });
    await assert.rejects(client.loadAll(uniqueId("nope")), { code: "not_found", status: 404 });
  });

  test("orphaned tool calls: keep, strip, synthesize (a view only)", async () => {
    const id = uniqueId("orphans");
    await client.append(
      id,
      [
        text("user", "go", "o1"),
        { id: "o2", role: "assistant", parts: [{ type: "tool_call", id: "call-x", name: "slow", arguments: "{}" }] },
      ],
      { createIfMissing: true },
    );
    const kept = await client.load(id, { orphans: "keep" });
    assert.equal(kept.messages.length, 2);
    const synthesized = await client.load(id, { orphans: "synthesize" });
    assert.equal(synthesized.repairs?.policy, "synthesize_interrupted");
    assert.deepEqual(synthesized.repairs?.orphaned_calls.map((c) => c.call_id), ["call-x"]);
    assert.ok(
      synthesized.messages.some((m) => m.parts.some((p) => p.type === "tool_result" && p.call_id === "call-x")),
      "a synthesized result answers the orphan",
    );
    const stripped = await client.load(id, { orphans: "strip" });
    assert.equal(stripped.repairs?.policy, "strip");
    assert.ok(!stripped.messages.some((m) => m.parts.some((p) => p.type === "tool_call")));
    assert.equal((await client.loadAll(id)).messages.length, 2, "storage is unchanged");
  });
});

describe("formats", () => {
  test("OpenAI Chat messages in, Stowage and Anthropic out", async () => {
    const id = uniqueId("openai");
    await client.openConversation(id);
    const chat = [
      { role: "system", content: "be brief" },
      { role: "user", content: "weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "18C" },
      { role: "assistant", content: "It is 18C." },
    ];
    const outcome = await client.append(id, chat, { format: "openai", idempotencyKey: "chat-1" });
    assert.equal(outcome.stored, 5);

    const stored = await client.loadAll(id);
    assert.deepEqual(stored.messages.map((m) => m.role), ["system", "user", "assistant", "tool", "assistant"]);
    assert.deepEqual(stored.messages[2]?.parts, [
      { type: "tool_call", id: "call_1", name: "weather", arguments: '{"city":"Paris"}' },
    ]);

    const back = await client.loadAll(id, { format: "openai", mode: "pure" });
    assert.deepEqual(back.messages, chat);

    const anthropic = await client.loadAll(id, { format: "anthropic", mode: "pure" });
    const toolUse = anthropic.messages.find(
      (m) => Array.isArray(m.content) && (m.content as { type: string }[]).some((b) => b.type === "tool_use"),
    );
    assert.ok(toolUse, JSON.stringify(anthropic.messages));

    // A page in a provider format too.
    const page = await client.load(id, { format: "openai", mode: "pure", limit: 2 });
    assert.deepEqual(page.messages, chat.slice(3));
  });

  test("keep mode round-trips a provider format losslessly; pure lists what it dropped", async () => {
    const id = uniqueId("anthropic");
    await client.openConversation(id);
    const anthropic = [
      { role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] },
      { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "sig" }, { type: "text", text: "hello" }] },
    ];
    await client.append(id, anthropic, { format: "anthropic", idempotencyKey: "a-1" });
    const keep = await client.loadAll(id, { format: "anthropic" });
    assert.equal(keep.messages.length, 2);
    assert.deepEqual(keep.messages[0]?.content, anthropic[0]?.content);
    assert.deepEqual(keep.messages[1]?.content, anthropic[1]?.content);

    const openaiPure = await client.loadAll(id, { format: "openai", mode: "pure" });
    assert.ok((openaiPure.dropped ?? []).length > 0, "thinking has no Chat Completions form");
    assert.ok(openaiPure.messages.every((m) => !("x_stowage" in m)));
  });

  test("OpenAI Responses items and popping in a format", async () => {
    const id = uniqueId("responses");
    await client.openConversation(id);
    const items = [
      { role: "user", content: "hi" },
      { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "42" },
      { role: "assistant", content: [{ type: "output_text", text: "It is 42." }] },
    ];
    const outcome = await client.append(id, items, { format: "openai-responses", idempotencyKey: "r-1" });
    assert.equal(outcome.stored, 4);
    const popped = await client.pop(id, { format: "openai-responses", mode: "pure" });
    assert.deepEqual(popped.message, items[3]);
    // Popping the result now would orphan its call: refused, and nothing is removed.
    await assert.rejects(client.pop(id), { code: "invalid_input", status: 400 });
    assert.equal((await client.getConversation(id)).message_count, 3);
  });

  test("display save takes a format too", async () => {
    const id = uniqueId("display-format");
    await client.openConversation(id);
    const records = await client.saveDisplayMessage(id, { role: "user", content: "hello there" }, { format: "openai" });
    assert.equal(records.length, 1);
    assert.equal(records[0]?.message_type, "user");
    assert.equal(records[0]?.content_type, "text");
  });

  test("an unknown format is 400 unsupported_format naming the known ones; pure with stowage 400", async () => {
    const id = await seeded(1);
    await assert.rejects(
      client.loadAll(id, { format: "xml" as "openai" }),
      (error) => isStowageError(error, "unsupported_format") && error.status === 400 && /ai-sdk-ui/.test(error.message),
    );
    await assert.rejects(client.loadAll(id, { mode: "pure" }), { code: "invalid_input", status: 400 });
  });
});
