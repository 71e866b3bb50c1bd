import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { convertToModelMessages, createUIMessageStream, validateUIMessages, type UIMessage } from "ai";

import { StowageClient, isStowageError } from "@stowage/client";
import { loadChat as loadChatFromSubpath, saveChat as saveChatFromSubpath } from "@stowage/client/ai";
import { loadChat, saveChat } from "@stowage/client";

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

type Meta = { model?: string; usage?: { totalTokens: number }; createdAt?: number };
type ChatMessage = UIMessage<Meta>;

/** A chat with every part kind the AI SDK v5 has, tool parts in every state. */
function chat(): ChatMessage[] {
  return [
    { id: "s-0", role: "system", parts: [{ type: "text", text: "You are a travel assistant." }] },
    {
      id: "u-1",
      role: "user",
      metadata: { createdAt: 1767225600000 },
      parts: [
        { type: "text", text: "Weather in Paris and Berlin? Here is my ticket." },
        { type: "file", mediaType: "image/png", url: "data:image/png;base64,iVBORw0KGgo=", filename: "ticket.png" },
      ],
    },
    {
      id: "a-1",
      role: "assistant",
      metadata: { model: "test-model", usage: { totalTokens: 321 } },
      parts: [
        { type: "step-start" },
        { type: "reasoning", text: "Two cities: two tool calls.", state: "done", providerMetadata: { anthropic: { signature: "sig-1" } } },
        {
          type: "tool-weather",
          toolCallId: "call-paris",
          state: "output-available",
          input: { city: "Paris", units: "metric" },
          output: { tempC: 18.5, sky: "clear", hourly: [17, 18, 19] },
        },
        { type: "tool-weather", toolCallId: "call-berlin", state: "output-error", input: { city: "Berlin" }, errorText: "station offline" },
        { type: "tool-weather", toolCallId: "call-rome", state: "input-available", input: { city: "Rome" } },
        { type: "tool-weather", toolCallId: "call-oslo", state: "input-streaming", input: { city: "Os" } },
        { type: "step-start" },
        { type: "text", text: "Paris: 18.5 °C and clear. Berlin's station is offline.", state: "done" },
        { type: "source-url", sourceId: "src-1", url: "https://weather.example/paris", title: "Paris weather" },
        { type: "data-forecast", id: "d-1", data: { city: "Paris", days: [1, 2, 3] } },
      ],
    },
    { id: "u-2", role: "user", parts: [{ type: "text", text: "Book dinner at 19:00." }] },
    {
      id: "a-2",
      role: "assistant",
      parts: [
        { type: "step-start" },
        { type: "dynamic-tool", toolName: "book_table", toolCallId: "call-book", state: "input-available", input: { when: "19:00", people: 2 } },
      ],
    },
  ];
}

describe("Vercel AI SDK: saveChat / loadChat", () => {
  test("a chat with text, reasoning, files, sources, data and tool parts in every state round-trips exactly", async () => {
    const id = uniqueId("chat");
    const messages = chat();
    const saved = await saveChat(client, id, messages, { meta: { title: "Trip", agent_id: "travel" } });
    assert.equal(typeof saved.version, "number");

    const loaded = await loadChat<ChatMessage>(client, id);
    assert.deepEqual(loaded, messages);

    // Valid for the framework: validateUIMessages accepts them, and they convert to model messages.
    const validated = await validateUIMessages<ChatMessage>({ messages: loaded });
    assert.deepEqual(validated, messages);
    const model = convertToModelMessages(loaded);
    assert.deepEqual(model, convertToModelMessages(messages), "the model sees exactly what it would have seen");
    assert.deepEqual(model.slice(0, 5).map((m) => m.role), ["system", "user", "assistant", "tool", "assistant"]);
    const toolMessage = model[3];
    assert.ok(toolMessage?.role === "tool");
    assert.deepEqual(
      toolMessage.content.map((c) => [c.toolCallId, c.output.type]),
      [["call-paris", "json"], ["call-berlin", "error-text"]],
    );

    // The server stored real Stowage messages (not an opaque blob): the meta, tool calls and results are modelled.
    const info = await client.getConversation(id);
    assert.equal(info.title, "Trip");
    assert.equal(info.agent_id, "travel");
    const stored = await client.loadAll(id);
    const calls = stored.messages.flatMap((m) => m.parts).filter((p) => p.type === "tool_call");
    assert.deepEqual(calls.map((p) => p.type === "tool_call" && [p.id, p.name]), [
      ["call-paris", "weather"],
      ["call-berlin", "weather"],
      ["call-rome", "weather"],
      ["call-oslo", "weather"],
      ["call-book", "book_table"],
    ]);
    assert.ok(stored.messages.some((m) => m.role === "tool"));
  });

  test("saving again replaces the history: updated tool states and new messages are stored as they are", async () => {
    const id = uniqueId("chat-update");
    const first = chat();
    await saveChat(client, id, first);
    const second = chat();
    const last = second[second.length - 1] as ChatMessage;
    last.parts[1] = {
      type: "dynamic-tool",
      toolName: "book_table",
      toolCallId: "call-book",
      state: "output-available",
      input: { when: "19:00", people: 2 },
      output: "Table booked",
    };
    last.parts.push({ type: "step-start" }, { type: "text", text: "Booked for two at 19:00.", state: "done" });
    second.push({ id: "u-3", role: "user", parts: [{ type: "text", text: "Thanks!" }] });
    const info = await client.getConversation(id);
    await saveChat(client, id, second, { expectedVersion: info.version });
    assert.deepEqual(await loadChat(client, id), second);
    // A stale writer is refused.
    await assert.rejects(saveChat(client, id, first, { expectedVersion: info.version }), { code: "conflict", status: 409 });
  });

  test("a missing chat loads as [] (or throws with ifMissing: 'throw'); expectedVersion 0 creates", async () => {
    const id = uniqueId("chat-new");
    assert.deepEqual(await loadChat(client, id), []);
    await assert.rejects(loadChat(client, id, { ifMissing: "throw" }), (e) => isStowageError(e, "not_found"));
    await saveChat(client, id, chat().slice(0, 2), { expectedVersion: 0 });
    assert.equal((await loadChat(client, id)).length, 2);
  });

  test("mode 'keep' adds the server's x_stowage members; @stowage/client/ai types with the SDK's UIMessage", async () => {
    const id = uniqueId("chat-keep");
    await saveChatFromSubpath(client, id, chat().slice(0, 2));
    const kept: UIMessage[] = await loadChatFromSubpath(client, id, { mode: "keep" });
    assert.ok(kept.every((m) => "x_stowage" in m));
    const pure = await loadChatFromSubpath<ChatMessage>(client, id);
    assert.deepEqual(pure, chat().slice(0, 2));
  });

  test("a route's onFinish persists the streamed assistant message (createUIMessageStream, no LLM)", async () => {
    const id = uniqueId("chat-route");
    const history: UIMessage[] = [{ id: "u-1", role: "user", parts: [{ type: "text", text: "Say hi" }] }];
    await saveChat(client, id, history);

    // What a Next.js route does: stream the answer, persist in onFinish.
    let persisted!: Promise<unknown>;
    const stream = createUIMessageStream({
      originalMessages: await loadChat<UIMessage>(client, id),
      execute: ({ writer }) => {
        writer.write({ type: "start", messageId: "a-streamed" });
        writer.write({ type: "start-step" });
        writer.write({ type: "text-start", id: "t-1" });
        writer.write({ type: "text-delta", id: "t-1", delta: "Hi " });
        writer.write({ type: "text-delta", id: "t-1", delta: "there!" });
        writer.write({ type: "text-end", id: "t-1" });
        writer.write({ type: "finish-step" });
        writer.write({ type: "finish" });
      },
      onFinish: ({ messages }) => {
        persisted = saveChat(client, id, messages);
      },
    });
    for await (const _chunk of stream) {
      // A client would read these chunks.
    }
    await persisted;
    const loaded = await loadChat(client, id);
    assert.deepEqual(loaded, [
      ...history,
      { id: "a-streamed", role: "assistant", parts: [{ type: "step-start" }, { type: "text", text: "Hi there!", state: "done" }] },
    ]);
    await validateUIMessages({ messages: loaded });
  });

  test("two assistant UIMessages in a row stay two messages", async () => {
    const id = uniqueId("chat-consecutive");
    const messages: UIMessage[] = [
      { id: "u", role: "user", parts: [{ type: "text", text: "hi" }] },
      { id: "a", role: "assistant", parts: [{ type: "step-start" }, { type: "text", text: "one" }] },
      { id: "b", role: "assistant", parts: [{ type: "step-start" }, { type: "text", text: "two" }] },
    ];
    await saveChat(client, id, messages);
    assert.deepEqual(await loadChat(client, id), messages);
  });
});
