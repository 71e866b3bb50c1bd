import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { SseParser, parseSseStream, type SseMessage } from "@stowage/client";

function parseAll(chunks: string[], parser = new SseParser()): SseMessage[] {
  return chunks.flatMap((chunk) => parser.push(chunk));
}

/** Every way of cutting `text` in two. */
function everySplit(text: string): string[][] {
  return Array.from({ length: text.length + 1 }, (_, i) => [text.slice(0, i), text.slice(i)]);
}

describe("SSE parser", () => {
  const stream =
    "\ufeff: comment\nretry: 250\nevent: display_message_saved\nid: e-1\ndata: {\"a\":\ndata: 1}\n\n" +
    "data:no space\r\n\r\n" +
    "event: x\rid: e-3\rdata\r\r" +
    "id\n\n" + // an empty id resets the last id; no data: no event
    "data: last\n\n" +
    "data: dangling without blank line";
  const expected: SseMessage[] = [
    { event: "display_message_saved", data: '{"a":\n1}', id: "e-1" },
    { event: "message", data: "no space", id: "e-1" },
    { event: "x", data: "", id: "e-3" },
    { event: "message", data: "last", id: "" },
  ];

  test("fields, comments, BOM, multi-line data, CR/LF/CRLF line ends, id persistence", () => {
    const parser = new SseParser();
    assert.deepEqual(parseAll([stream], parser), expected);
    assert.equal(parser.retry, 250);
  });

  test("the same events whatever the chunk boundaries", () => {
    for (const chunks of everySplit(stream)) assert.deepEqual(parseAll(chunks), expected, JSON.stringify(chunks));
    assert.deepEqual(parseAll([...stream]), expected, "one character at a time");
  });

  test("a CRLF split across chunks is one line end", () => {
    assert.deepEqual(parseAll(["data: a\r", "\n\r", "\ndata: b\r\n\r\n"]), [
      { event: "message", data: "a", id: "" },
      { event: "message", data: "b", id: "" },
    ]);
  });

  test("ids with NUL are ignored; the initial last id carries over", () => {
    const parser = new SseParser("start-0");
    assert.deepEqual(parser.push("id: bad\0id\ndata: x\n\n"), [{ event: "message", data: "x", id: "start-0" }]);
  });

  test("byte streams: UTF-8 split inside a character decodes once", async () => {
    const bytes = new TextEncoder().encode("data: zoë ✓ 🚀\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const out: SseMessage[] = [];
    for await (const message of parseSseStream(body)) out.push(message);
    assert.deepEqual(out, [{ event: "message", data: "zoë ✓ 🚀", id: "" }]);
  });

  test("stopping early cancels the byte stream", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode("data: tick\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const _ of parseSseStream(body)) break;
    assert.equal(cancelled, true);
  });
});
