import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import { StowageClient, StowageError, isStowageError } from "@stowage/client";

import { startServer, uniqueId, type TestServer } from "./support/server.js";

let server: TestServer;
let acme: StowageClient;
let globex: StowageClient;

before(async () => {
  server = await startServer();
  acme = server.client();
  globex = server.client({ token: server.globexToken });
});
after(async () => {
  await server?.stop();
});

describe("error mapping", () => {
  test("404 not_found is a typed StowageError with code, status, message, method and url", async () => {
    const id = uniqueId("missing");
    const error = await acme.getConversation(id).then(
      () => assert.fail("expected a 404"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof StowageError);
    assert.ok(isStowageError(error));
    assert.ok(isStowageError(error, "not_found", "conflict"));
    const other: unknown = error;
    assert.ok(!isStowageError(other, "conflict"));
    assert.equal(error.name, "StowageError");
    assert.equal(error.code, "not_found");
    assert.equal(error.status, 404);
    assert.equal(error.method, "GET");
    assert.ok(error.url.endsWith(`/v1/conversations/${encodeURIComponent(id)}`), error.url);
    assert.equal(typeof error.serverMessage, "string");
    assert.ok(error.message.startsWith("not_found (404): "));
  });

  test("401 unauthorized without a token, with a wrong token, and with a malformed header", async () => {
    const cases = [
      new StowageClient({ baseUrl: server.url }),
      new StowageClient({ baseUrl: server.url, token: "tok-0000000000000000-wrong" }),
      new StowageClient({ baseUrl: server.url, headers: { authorization: "Basic abc" } }),
    ];
    for (const anonymous of cases) {
      await assert.rejects(anonymous.listConversations(), (error) => {
        assert.ok(isStowageError(error, "unauthorized"));
        assert.equal(error.status, 401);
        return true;
      });
    }
  });

  test("400 invalid_input / invalid_json / unsupported_format", async () => {
    const id = uniqueId("bad");
    await acme.openConversation(id);
    await assert.rejects(acme.truncate(id, -1), { status: 400, code: "invalid_input" });
    await assert.rejects(acme.listDisplay(id, { limit: 0 }), { status: 400, code: "invalid_input" });
    await assert.rejects(acme.openConversation(uniqueId("bad-meta"), { title: 5 } as never), (error) => {
      assert.ok(isStowageError(error, "invalid_json"));
      assert.equal(error.status, 400);
      assert.match(error.serverMessage, /^title: /);
      return true;
    });
    await assert.rejects(acme.load(id, { format: "yaml" as "openai" }), { status: 400, code: "unsupported_format" });
    await assert.rejects(acme.openConversation(""), (error) => isStowageError(error) && error.status >= 400 && error.status < 500);
  });

  test("a body that is not the server's JSON becomes http_error with the status", async () => {
    const fake = await fakeServer((_req, res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html>bad gateway</html>");
    });
    try {
      const client = new StowageClient({ baseUrl: fake.url, retry: { retries: 0 } });
      await assert.rejects(client.listConversations(), (error) => {
        assert.ok(isStowageError(error, "http_error"));
        assert.equal(error.status, 502);
        assert.match(error.message, /bad gateway/);
        return true;
      });
    } finally {
      await fake.close();
    }
  });
});

describe("tenant and user isolation", () => {
  test("another tenant's conversation is indistinguishable from a missing one", async () => {
    const id = uniqueId("private");
    await acme.append(id, [{ id: "secret", role: "user", parts: [{ type: "text", text: "acme only" }] }], {
      createIfMissing: true,
      meta: { title: "acme's" },
    });
    await acme.saveSynthetic(id, { message_type: "system", content_type: "note", content: "acme display" });

    await assert.rejects(globex.getConversation(id), { code: "not_found", status: 404 });
    await assert.rejects(globex.loadAll(id), { code: "not_found" });
    await assert.rejects(globex.append(id, [{ role: "user", parts: [] }]), { code: "not_found" });
    assert.deepEqual((await globex.listDisplay(id)).records, []);
    assert.equal(await globex.deleteConversation(id), false);
    for await (const info of globex.conversations()) assert.notEqual(info.id, id);

    // globex may use the same id for its own conversation; acme's is untouched.
    const theirs = await globex.openConversation(id, { title: "globex's" });
    assert.deepEqual(theirs.scope, { tenant: "globex", user: "" });
    assert.equal((await acme.getConversation(id)).title, "acme's");
    assert.equal((await acme.loadAll(id)).messages[0]?.id, "secret");
  });

  test("users within a tenant are separate scopes (Stowage-User, UTF-8)", async () => {
    const id = uniqueId("per-user");
    const zoe = acme.withUser("zoë ✓");
    await zoe.openConversation(id, { title: "zoë's" });
    const info = await zoe.getConversation(id);
    assert.deepEqual(info.scope, { tenant: "acme", user: "zoë ✓" });
    await assert.rejects(acme.getConversation(id), { code: "not_found" });
    await assert.rejects(acme.withUser("bob").getConversation(id), { code: "not_found" });
    // A per-call user overrides the client's.
    assert.equal((await acme.getConversation(id, { user: "zoë ✓" })).title, "zoë's");
  });
});

describe("timeouts, aborts and retries", () => {
  test("timeoutMs rejects with a TimeoutError; an aborted signal with its reason", async () => {
    const fake = await fakeServer(() => {
      // Never answers.
    });
    try {
      const client = new StowageClient({ baseUrl: fake.url, timeoutMs: 50, retry: { retries: 0 } });
      await assert.rejects(client.getConversation("x"), { name: "TimeoutError" });
      await assert.rejects(new StowageClient({ baseUrl: fake.url }).health({ timeoutMs: 20 }), { name: "TimeoutError" });
      const controller = new AbortController();
      const pending = new StowageClient({ baseUrl: fake.url, timeoutMs: 0 }).listConversations({ signal: controller.signal });
      controller.abort(new Error("user gave up"));
      await assert.rejects(pending, { message: "user gave up" });
      await assert.rejects(acme.listConversations({ signal: AbortSignal.abort() }), { name: "AbortError" });
    } finally {
      await fake.close();
    }
  });

  test("429 is retried after Retry-After; 503 only for requests safe to repeat; pop never", async () => {
    let calls = 0;
    const keys: (string | undefined)[] = [];
    const fake = await fakeServer((req, res) => {
      calls++;
      keys.push(req.headers["idempotency-key"] as string | undefined);
      if (calls % 2 === 1) {
        const status = req.url?.includes("/pop") || req.method === "GET" ? 503 : 429;
        res.writeHead(status, { "content-type": "application/json", "retry-after": "0" });
        res.end(JSON.stringify({ error: { code: status === 429 ? "too_many_requests" : "overloaded", message: "later" } }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ conversations: [], next_cursor: null, ids: ["a"], seqs: [1], stored: 1, version: 1 }));
    });
    try {
      const client = new StowageClient({ baseUrl: fake.url, retry: { retries: 2, minDelayMs: 1 } });
      assert.deepEqual(await client.listConversations(), { conversations: [], next_cursor: null, ids: ["a"], seqs: [1], stored: 1, version: 1 });
      assert.equal(calls, 2, "a GET answered 503 is retried");

      const outcome = await client.append("c", [{ role: "user", parts: [] }]);
      assert.equal(outcome.stored, 1);
      assert.equal(calls, 4, "429 is retried");
      assert.ok(keys[2] !== undefined && keys[2] === keys[3], "the retry repeats the generated Idempotency-Key");

      await assert.rejects(client.pop("c"), { code: "overloaded", status: 503, retryAfter: 0 });
      assert.equal(calls, 5, "pop is not retried on 503");

      const noRetry = new StowageClient({ baseUrl: fake.url, retry: { retries: 0 } });
      calls = 0;
      await assert.rejects(noRetry.listConversations(), { status: 503 });
      assert.equal(calls, 1);
    } finally {
      await fake.close();
    }
  });
});

async function fakeServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; close: () => Promise<void> }> {
  const fake = createServer(handler);
  await new Promise<void>((done) => fake.listen(0, "127.0.0.1", done));
  const { port } = fake.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      fake.closeAllConnections();
      await new Promise<void>((done) => fake.close(() => done()));
    },
  };
}
