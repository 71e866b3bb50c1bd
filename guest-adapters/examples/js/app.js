// The JavaScript example adapter (world `sql-adapter`, stowage:store@0.2.0),
// built with componentize-qjs --sync. See README.md.
//
// Mapping (componentize-qjs): an exported interface is an exported object named
// in camelCase; `result<T, error>` is "return T" or "throw {tag, val}"; records
// have camelCase fields; enums are their case name as a string; option<T> is
// T or null; list<u8> is a Uint8Array; s64/u64 are numbers (exact up to 2^53).
//
// Every export goes through `guarded`: QuickJS traps the whole instance when an
// export throws anything that is not a contract error, so an unexpected
// exception (a SQL error, a bug) becomes a `storage` error that says what
// happened, and is logged through the host's `log` import (there is no console).
import log from "stowage:store/log@0.2.0";

import { conversationStore as conversations } from "./conversations.js";
import { StoreError, ensureReady } from "./db.js";
import { displayStore as display } from "./display.js";

/**
 * One line saying what an unexpected exception was. An import's error (the
 * `sql` calls) arrives as an Error whose `payload` is the WIT error, `{tag, val}`.
 */
function describe(e) {
  const error = e && typeof e === "object" && e.payload && "tag" in e.payload ? e.payload : null;
  if (error) return `database ${error.tag}${error.val === undefined ? "" : `: ${error.val}`}`;
  return String(e && e.stack ? `${e}\n${e.stack}` : e);
}

function guarded(name, fn) {
  return (...args) => {
    try {
      ensureReady();
      return fn(...args);
    } catch (e) {
      if (e instanceof StoreError) throw e.error;
      const reason = `${name}: ${describe(e)}`;
      log.log("warn", `js example adapter: ${reason}`);
      throw { tag: "storage", val: reason };
    }
  };
}

const guardAll = (object) =>
  Object.fromEntries(Object.entries(object).map(([name, fn]) => [name, guarded(name, fn)]));

export const conversationStore = guardAll(conversations);
export const displayStore = guardAll(display);
