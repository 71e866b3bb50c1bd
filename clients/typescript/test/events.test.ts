import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import { StowageClient, isStowageError, type EventStream, type StowageEvent } from "@stowage/client";

import { startServer, uniqueId, type TestServer } from "./support/server.js";

let server: TestServer;
let client: StowageClient;

before(async () => {
  server = await startServer("replay_events = 16");
  client = server.client();
});
after(async () => {
  await server?.stop();
});

/** Takes the next `n` events of an open iterator. */
async function take(iterator: AsyncIterator<StowageEvent>, n: number): Promise<StowageEvent[]> {
  const out: StowageEvent[] = [];
  while (out.length < n) {
    const next = await iterator.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

/** Starts iterating and waits until the stream is connected. */
async function open(stream: EventStream): Promise<AsyncIterator<StowageEvent>> {
  const iterator = stream[Symbol.asyncIterator]();
  const first = iterator.next();
  await stream.opened;
  // Hand the already-started `next()` back through a small wrapper.
  let pending: Promise<IteratorResult<StowageEvent>> | undefined = first;
  return {
    next: () => {
      if (pending) {
        const p = pending;
        pending = undefined;
        return p;
      }
      return iterator.next();
    },
    return: (value?: unknown) => iterator.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
  };
}

const note = (text: string) => ({ message_type: "system", content_type: "note", content: { text } });

function contents(events: StowageEvent[]): unknown[] {
  return events.map((e) => (e.type === "events_lost" ? "LOST" : e.data.record.content));
}

describe("display events over SSE", () => {
  test("a conversation's stream delivers saves and updates, in order, with ids", async () => {
    const id = uniqueId("events");
    const controller = new AbortController();
    const stream = client.events({ conversation: id, signal: controller.signal });
    const events = await open(stream);

    await client.saveDisplayMessage(id, {
      role: "assistant",
      parts: [
        { type: "text", text: "checking" },
        { type: "tool_call", id: "c1", name: "weather", arguments: "{}" },
      ],
    }, { agentId: "planner" });
    await client.updateToolStatus(id, "c1", "executing");

    const got = await take(events, 3);
    assert.deepEqual(got.map((e) => e.type), ["display_message_saved", "display_message_saved", "display_message_updated"]);
    const [saved, card, updated] = got;
    assert.ok(saved?.type === "display_message_saved" && card?.type === "display_message_saved");
    assert.equal(saved.data.event, "display_message_saved");
    assert.equal(saved.data.agent_id, "planner");
    assert.deepEqual(saved.data.record.content, { text: "checking" });
    assert.equal(card.data.record.status, "pending");
    assert.ok(updated?.type === "display_message_updated");
    assert.equal(updated.data.record.status, "executing");
    for (const e of got) assert.match(e.id, /^[0-9a-f]+-\d+$/);
    assert.equal(stream.lastEventId, updated.id);

    controller.abort();
    assert.deepEqual(await events.next(), { done: true, value: undefined }, "abort ends the iteration quietly");
  });

  test("resume with Last-Event-ID replays what was missed, then goes on live", async () => {
    const id = uniqueId("resume");
    const first = client.events({ conversation: id });
    const events = await open(first);
    await client.saveSynthetic(id, note("one"));
    const [one] = await take(events, 1);
    assert.ok(one);
    await events.return?.(undefined); // `break`: closes the connection
    const resumeFrom = first.lastEventId;
    assert.equal(resumeFrom, one.id);

    // Missed while disconnected.
    await client.saveSynthetic(id, note("two"));
    await client.saveSynthetic(id, note("three"));

    const second = client.events({ conversation: id, lastEventId: resumeFrom });
    const resumed = await open(second);
    await client.saveSynthetic(id, note("four"));
    const got = await take(resumed, 3);
    assert.deepEqual(contents(got), [{ text: "two" }, { text: "three" }, { text: "four" }]);
    await resumed.return?.(undefined);

    // The same through `?last_event_id=` (for clients that cannot set headers).
    const third = client.events({ conversation: id, lastEventId: resumeFrom, lastEventIdInQuery: true });
    const viaQuery = await open(third);
    assert.deepEqual(contents(await take(viaQuery, 3)), [{ text: "two" }, { text: "three" }, { text: "four" }]);
    // close() ends a pending next() as done.
    const pending = viaQuery.next();
    third.close();
    assert.deepEqual(await pending, { done: true, value: undefined });
  });

  test("for await … break closes the stream; the scope stream sees every conversation", async () => {
    const a = uniqueId("scope-a");
    const b = uniqueId("scope-b");
    const stream = client.events();
    const iterator = await open(stream);
    await client.saveSynthetic(a, note("in a"));
    await client.saveSynthetic(b, note("in b"));
    const seen: string[] = [];
    for await (const event of { [Symbol.asyncIterator]: () => iterator }) {
      if (event.type === "events_lost") continue;
      if (event.data.record.conversation_id === a || event.data.record.conversation_id === b) {
        seen.push(event.data.record.conversation_id);
      }
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, [a, b]);
  });

  test("an id from another epoch (a restart) starts with events_lost", async () => {
    const id = uniqueId("lost");
    const stream = client.events({ conversation: id, lastEventId: "00000000000000ff-3" });
    const events = await open(stream);
    const [lost] = await take(events, 1);
    assert.ok(lost?.type === "events_lost");
    assert.equal(lost.data.code, "events_lost");
    assert.equal(lost.data.last_event_id, "00000000000000ff-3");
    assert.match(lost.id, /^[0-9a-f]+-\d+$/);
    await client.saveSynthetic(id, note("after loss"));
    const [next] = await take(events, 1);
    assert.deepEqual(contents([next as StowageEvent]), [{ text: "after loss" }]);
    await events.return?.(undefined);
  });

  test("a replay buffer overrun is reported as events_lost, then the stream goes on", async () => {
    const id = uniqueId("overrun");
    const first = client.events({ conversation: id });
    const events = await open(first);
    await client.saveSynthetic(id, note("seen"));
    await take(events, 1);
    await events.return?.(undefined);
    // replay_events = 16 in this server's config: 40 more overflow the buffer.
    for (let i = 0; i < 40; i++) await client.saveSynthetic(id, note(`missed ${i}`));
    const second = client.events({ conversation: id, lastEventId: first.lastEventId });
    const resumed = await open(second);
    const [lost] = await take(resumed, 1);
    assert.equal(lost?.type, "events_lost");
    await resumed.return?.(undefined);
    // The documented recovery: reload the display list.
    const page = await client.listDisplay(id);
    assert.equal(page.records.length, 41);
  });

  test("a malformed Last-Event-ID is 400 invalid_last_event_id (not retried)", async () => {
    for (const lastEventIdInQuery of [false, true]) {
      const stream = client.events({ lastEventId: "not-an-id", lastEventIdInQuery });
      await assert.rejects(
        (async () => {
          for await (const _ of stream) break;
        })(),
        (error) => isStowageError(error, "invalid_last_event_id") && error.status === 400,
      );
      await assert.rejects(stream.opened, { code: "invalid_last_event_id" });
    }
  });

  test("a stream without a valid token is 401", async () => {
    const anonymous = new StowageClient({ baseUrl: server.url });
    await assert.rejects(
      (async () => {
        for await (const _ of anonymous.events()) break;
      })(),
      { code: "unauthorized", status: 401 },
    );
  });

  test("tenants and users never see each other's events", async () => {
    const globex = server.client({ token: server.globexToken });
    const alice = client.withUser("alice");
    const id = uniqueId("shared-id");
    const globexStream = globex.events({ conversation: id });
    const aliceStream = alice.events();
    const g = await open(globexStream);
    const al = await open(aliceStream);
    // The same conversation id in acme's empty user, then in globex, then alice's.
    await client.saveSynthetic(id, note("acme"));
    await globex.saveSynthetic(id, note("globex"));
    await alice.saveSynthetic(id, note("alice"));
    assert.deepEqual(contents(await take(g, 1)), [{ text: "globex" }]);
    const [aliceEvent] = await take(al, 1);
    assert.deepEqual(contents([aliceEvent as StowageEvent]), [{ text: "alice" }]);
    assert.ok(aliceEvent?.type === "display_message_saved");
    assert.deepEqual(aliceEvent.data.record.scope, { tenant: "acme", user: "alice" });
    await g.return?.(undefined);
    await al.return?.(undefined);
  });
});

describe("reconnection (a scripted SSE server)", () => {
  test("reconnects after the stream ends, sending Last-Event-ID; honours retry:", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const record = (n: number) => ({
      event: "display_message_saved",
      record: { scope: { tenant: "t", user: "" }, conversation_id: "c", seq: n, message_type: "system", content_type: "note", content: n, created_at: 0, updated_at: 0 },
    });
    const fake = createServer((request, response) => {
      seen.push(request.headers);
      response.writeHead(200, { "content-type": "text/event-stream" });
      if (seen.length === 1) {
        // retry: 1 ms; one event split over writes, a comment, CRLF line ends; then the stream ends.
        response.write("retry: 1\r\n: keep-alive\r\n\r\nevent: display_message_saved\r\nid: ab-1\r\nda");
        response.end(`ta: ${JSON.stringify(record(1))}\r\n\r\n`);
      } else {
        response.write(`event: unknown_kind\ndata: {}\n\nevent: display_message_saved\nid: ab-2\ndata: ${JSON.stringify(record(2))}\n\n`);
      }
    });
    await new Promise<void>((done) => fake.listen(0, "127.0.0.1", done));
    const { port } = fake.address() as AddressInfo;
    try {
      const fakeClient = new StowageClient({ baseUrl: `http://127.0.0.1:${port}`, token: "t0k", user: "zoë" });
      const opens: (string | undefined)[] = [];
      const stream = fakeClient.events({ onOpen: ({ lastEventId }) => opens.push(lastEventId) });
      const got: StowageEvent[] = [];
      for await (const event of stream) {
        got.push(event);
        if (got.length === 2) break;
      }
      assert.deepEqual(got.map((e) => e.id), ["ab-1", "ab-2"]);
      assert.deepEqual(contents(got), [1, 2]);
      assert.deepEqual(opens, [undefined, "ab-1"]);
      assert.equal(seen.length, 2);
      assert.equal(seen[0]?.["last-event-id"], undefined);
      assert.equal(seen[1]?.["last-event-id"], "ab-1");
      assert.equal(seen[0]?.authorization, "Bearer t0k");
      assert.equal(seen[0]?.accept, "text/event-stream");
      // The user header carries UTF-8 bytes.
      assert.equal(Buffer.from(seen[0]?.["stowage-user"] as string, "latin1").toString("utf8"), "zoë");
    } finally {
      fake.closeAllConnections();
      await new Promise<void>((done) => fake.close(() => done()));
    }
  });

  test("reconnect: false ends the iteration with the stream", async () => {
    const fake = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(`event: events_lost\nid: ff-9\ndata: {"code":"events_lost","message":"m","last_event_id":"ff-1"}\n\n`);
    });
    await new Promise<void>((done) => fake.listen(0, "127.0.0.1", done));
    const { port } = fake.address() as AddressInfo;
    try {
      const fakeClient = new StowageClient({ baseUrl: `http://127.0.0.1:${port}` });
      const got: StowageEvent[] = [];
      for await (const event of fakeClient.events({ reconnect: false })) got.push(event);
      assert.deepEqual(got, [{ type: "events_lost", id: "ff-9", data: { code: "events_lost", message: "m", last_event_id: "ff-1" } }]);
    } finally {
      fake.closeAllConnections();
      await new Promise<void>((done) => fake.close(() => done()));
    }
  });
});
