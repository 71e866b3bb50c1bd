/**
 * A Server-Sent Events parser (the WHATWG "event stream interpretation"),
 * incremental over arbitrary chunk boundaries: CRLF, LF and CR line ends (a CRLF
 * split across chunks counts once), a leading BOM, comments (`:` keep-alives),
 * multi-line `data`, `id` (ignored when it holds NUL; kept across events),
 * `retry` (kept on the parser), and events dispatched only at a blank line (a trailing event without
 * one is dropped, as the spec says).
 */

/** One dispatched event. */
export interface SseMessage {
  /** The `event:` field, `message` when absent. */
  event: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
  /** The last event id at dispatch (the stream's, carried across events), `""` when none. */
  id: string;
}

export class SseParser {
  private buffer = "";
  private firstChunk = true;
  private lastWasCR = false;
  private data: string[] = [];
  private hasData = false;
  private eventType = "";
  /** The reconnection time the server last asked for (`retry:`, milliseconds). */
  retry: number | undefined;
  /** The last event id seen (persists across events, as in EventSource). */
  lastEventId = "";

  constructor(initialLastEventId = "") {
    this.lastEventId = initialLastEventId;
  }

  /** Feeds decoded text; returns the events completed by it. */
  push(text: string): SseMessage[] {
    if (this.firstChunk && text.length > 0) {
      this.firstChunk = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const out: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 /* \n */) {
        if (this.lastWasCR && i === start && this.buffer === "") {
          // The LF of a CRLF whose CR ended the previous line.
          this.lastWasCR = false;
          start = i + 1;
          continue;
        }
        this.line(this.buffer + text.slice(start, i), out);
        this.buffer = "";
        this.lastWasCR = false;
        start = i + 1;
      } else if (c === 13 /* \r */) {
        this.line(this.buffer + text.slice(start, i), out);
        this.buffer = "";
        this.lastWasCR = true;
        start = i + 1;
      } else if (this.lastWasCR) {
        this.lastWasCR = false;
      }
    }
    this.buffer += text.slice(start);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === "") {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(":")) return; // comment (keep-alive)
    const colon = line.indexOf(":");
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
    }
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored
    }
  }

  private dispatch(out: SseMessage[]): void {
    if (!this.hasData) {
      this.eventType = "";
      return;
    }
    out.push({ event: this.eventType || "message", data: this.data.join("\n"), id: this.lastEventId });
    this.data = [];
    this.hasData = false;
    this.eventType = "";
  }
}

/** Parses a byte stream into events; cancels the stream when the consumer stops early. */
export async function* parseSseStream(
  body: ReadableStream<Uint8Array>,
  parser: SseParser = new SseParser(),
): AsyncGenerator<SseMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        const rest = decoder.decode();
        if (rest) yield* parser.push(rest);
        return;
      }
      const events = parser.push(decoder.decode(value, { stream: true }));
      for (const event of events) yield event;
    }
  } finally {
    if (!finished) {
      await reader.cancel().catch(() => undefined);
    }
    reader.releaseLock();
  }
}
