// {{name}}: a Stowage storage adapter in JavaScript (contract
// stowage:store@0.2.0, world `sql-adapter`), scaffolded by `stowage
// new-adapter` for componentize-qjs --sync. It passes `stowage check` as it is;
// change it from there.
//
// Where the data lives: QuickJS has no file API, so this adapter keeps its data
// in the SQL database the host lends through the `sql` capability (SQLite:
// `?N` placeholders). Its store needs the grants `sql` and `filesystem` (the
// QuickJS runtime imports wasi:filesystem even though nothing here uses it).
// Every write is one transaction; the contract's checks run inside it.
//
// Mapping (componentize-qjs): an exported interface is an exported object in
// camelCase; `result<T, error>` is "return T" or "throw {tag, val}"; records
// have camelCase fields; enums are strings; option<T> is T or null; list<u8>
// is a Uint8Array; u64/s64 are numbers. An export that throws anything but a
// contract error traps the instance, hence `guarded` below.
import sql from "stowage:store/sql@0.2.0";
import log from "stowage:store/log@0.2.0";

const ROLES = ["system", "developer", "user", "assistant", "tool"];
const KEY = "tenant = ?1 AND scope_user = ?2";
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS conversations (tenant TEXT, scope_user TEXT, id TEXT, created_at INTEGER,
     updated_at INTEGER, version INTEGER, last_seq INTEGER, meta_content BLOB, meta_tag BLOB,
     PRIMARY KEY (tenant, scope_user, id))`,
  `CREATE TABLE IF NOT EXISTS messages (tenant TEXT, scope_user TEXT, conversation_id TEXT, seq INTEGER,
     id TEXT, role INTEGER, created_at INTEGER, content BLOB, tag BLOB,
     PRIMARY KEY (tenant, scope_user, conversation_id, seq), UNIQUE (tenant, scope_user, conversation_id, id))`,
  `CREATE TABLE IF NOT EXISTS display (tenant TEXT, scope_user TEXT, conversation_id TEXT, seq INTEGER,
     message_id TEXT, message_type TEXT, content_type TEXT, tool_call_id TEXT, status TEXT,
     created_at INTEGER, updated_at INTEGER, body BLOB, tag BLOB,
     PRIMARY KEY (tenant, scope_user, conversation_id, seq))`,
];

// --- SQL helpers ---------------------------------------------------------------------

const int = (n) => ({ tag: "integer", val: n });
const text = (s) => (s === null ? { tag: "null" } : { tag: "text", val: s });
const blob = (b) => ({ tag: "blob", val: b });
const key = (scope, id) => [text(scope.tenant), text(scope.user), text(id)];
const rows = (statement, params) =>
  sql.query(statement, params).rows.map((r) => r.values.map((v) => (v.tag === "null" ? null : v.val)));

class Fail {
  constructor(tag, val) {
    this.error = val === undefined ? { tag } : { tag, val };
  }
}

function write(body) {
  sql.begin();
  try {
    const result = body();
    sql.commit();
    return result;
  } catch (e) {
    try { sql.rollback(); } catch { /* the host rolls back too */ }
    throw e;
  }
}

let ready = false;
function guarded(fn) {
  return (...args) => {
    try {
      if (!ready) {
        if (sql.getDialect() !== "sqlite") throw new Fail("unsupported", "this adapter speaks SQLite only");
        SCHEMA.forEach((s) => sql.execute(s, []));
        ready = true;
      }
      return fn(...args);
    } catch (e) {
      if (e instanceof Fail) throw e.error;
      const p = e && e.payload; // an import's error (a SQL error) is an Error with the WIT error as payload
      const reason = p && p.tag ? `database ${p.tag}: ${p.val ?? ""}` : String(e);
      log.log("warn", reason);
      throw { tag: "storage", val: reason };
    }
  };
}

function checkContiguous(items) {
  if (items.some((item, i) => i > 0 && item.seq !== items[i - 1].seq + 1)) {
    throw new Fail("invalid-input", "seqs are not contiguous");
  }
}

function checkVersion(expected, actual) {
  if (expected !== null && expected !== actual) {
    throw new Fail("conflict", { expectedVersion: expected, actualVersion: actual });
  }
}

// --- conversation-store --------------------------------------------------------------

const INFO = "id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, last_seq, version";
const info = ([id, tenant, user, content, tag, createdAt, updatedAt, lastSeq, version]) => ({
  id, scope: { tenant, user }, meta: { content, tag }, createdAt, updatedAt, messageCount: lastSeq, lastSeq, version,
});
const findInfo = (k) => rows(`SELECT ${INFO} FROM conversations WHERE ${KEY} AND id = ?3`, k).map(info)[0] ?? null;

function history(k) {
  const [row] = rows(`SELECT version, last_seq FROM conversations WHERE ${KEY} AND id = ?3`, k);
  if (!row) throw new Fail("not-found");
  return { version: row[0], lastSeq: row[1] };
}

function store(k, messages, version, lastSeq, now) {
  const inserts = messages.map(({ seq, message: m }) => ({
    sql: `INSERT INTO messages VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
    params: [...k, int(seq), text(m.id), int(ROLES.indexOf(m.role)), int(m.createdAt), blob(m.content), blob(m.tag)],
  }));
  const update = {
    sql: `UPDATE conversations SET version = ?4, last_seq = ?5, updated_at = ?6 WHERE ${KEY} AND id = ?3`,
    params: [...k, int(version), int(lastSeq), int(now)],
  };
  sql.executeBatch([...inserts, update]);
}

const MESSAGES = `FROM messages WHERE ${KEY} AND conversation_id = ?3`;

export const conversationStore = Object.fromEntries(Object.entries({
  open(scope, id, meta, now) {
    const k = key(scope, id);
    sql.execute(
      `INSERT INTO conversations VALUES (?1, ?2, ?3, ?4, ?4, 0, 0, ?5, ?6) ON CONFLICT DO NOTHING`,
      [...k, int(now), blob(meta.content), blob(meta.tag)],
    );
    return findInfo(k);
  },
  info(scope, id) {
    const found = findInfo(key(scope, id));
    if (!found) throw new Fail("not-found");
    return found;
  },
  updateMeta(scope, id, meta) {
    const changed = sql.execute(`UPDATE conversations SET meta_content = ?4, meta_tag = ?5 WHERE ${KEY} AND id = ?3`,
      [...key(scope, id), blob(meta.content), blob(meta.tag)]);
    if (changed === 0) throw new Fail("not-found");
  },
  append(scope, id, messages, expectedVersion, now) {
    checkContiguous(messages);
    const k = key(scope, id);
    return write(() => {
      // The contract's order: not-found, already-stored, conflict, out-of-sequence.
      const { version, lastSeq } = history(k);
      const seqs = [];
      messages.forEach(({ message }, index) => {
        const [row] = rows(`SELECT seq ${MESSAGES} AND id = ?4`, [...k, text(message.id)]);
        if (row) seqs.push({ index, seq: row[0] });
      });
      if (seqs.length) return { tag: "already-stored", val: { seqs, version } };
      checkVersion(expectedVersion, version);
      if (!messages.length) return { tag: "stored", val: version };
      if (messages[0].seq !== lastSeq + 1) return { tag: "out-of-sequence", val: lastSeq };
      store(k, messages, version + 1, messages[messages.length - 1].seq, now);
      return { tag: "stored", val: version + 1 };
    });
  },
  replace(scope, id, messages, expectedVersion, now) {
    checkContiguous(messages);
    if (messages.length && messages[0].seq !== 1) throw new Fail("invalid-input", "number messages from seq 1");
    const k = key(scope, id);
    return write(() => {
      const { version } = history(k);
      checkVersion(expectedVersion, version);
      sql.execute(`DELETE ${MESSAGES}`, k);
      store(k, messages, version + 1, messages.length, now);
      return version + 1;
    });
  },
  load(scope, id, range, limit) {
    const k = key(scope, id);
    history(k);
    const columns = "seq, id, role, created_at, content, tag";
    const found = range.tag === "after"
      ? rows(`SELECT ${columns} ${MESSAGES} AND seq > ?4 ORDER BY seq LIMIT ?5`, [...k, int(range.val), int(limit)])
      : range.tag === "before"
        ? rows(`SELECT ${columns} ${MESSAGES} AND seq < ?4 ORDER BY seq DESC LIMIT ?5`, [...k, int(range.val), int(limit)]).reverse()
        : rows(`SELECT ${columns} ${MESSAGES} ORDER BY seq DESC LIMIT ?4`, [...k, int(limit)]).reverse();
    return found.map(([seq, mid, role, createdAt, content, tag]) =>
      ({ seq, message: { id: mid, role: ROLES[role], createdAt, content, tag } }));
  },
  truncateAfter(scope, id, seq, expectedVersion, now) {
    const k = key(scope, id);
    return write(() => {
      const { version, lastSeq } = history(k);
      if (seq >= lastSeq) return { removed: 0, version };
      checkVersion(expectedVersion, version);
      const removed = sql.execute(`DELETE ${MESSAGES} AND seq > ?4`, [...k, int(seq)]);
      sql.execute(`UPDATE conversations SET version = ?4, last_seq = ?5, updated_at = ?6 WHERE ${KEY} AND id = ?3`,
        [...k, int(version + 1), int(seq), int(now)]);
      return { removed, version: version + 1 };
    });
  },
  delete(scope, id) {
    const k = key(scope, id);
    return write(() => [
      `DELETE FROM conversations WHERE ${KEY} AND id = ?3`,
      `DELETE ${MESSAGES}`,
      `DELETE FROM display WHERE ${KEY} AND conversation_id = ?3`,
    ].map((s) => sql.execute(s, k)).some((n) => n > 0));
  },
  list(scope, after, limit) {
    return rows(`SELECT ${INFO} FROM conversations WHERE ${KEY} AND (?3 IS NULL OR id > ?3) ORDER BY id LIMIT ?4`,
      [text(scope.tenant), text(scope.user), text(after), int(limit)]).map(info);
  },
}).map(([name, fn]) => [name, guarded(fn)]));

// --- display-store -------------------------------------------------------------------

const RECORD = "seq, message_id, message_type, content_type, tool_call_id, status, created_at, updated_at, body, tag";
const DISPLAY = `FROM display WHERE ${KEY} AND conversation_id = ?3`;
const recordParams = ({ seq, record: r }) => [int(seq), text(r.messageId), text(r.messageType), text(r.contentType),
  text(r.toolCallId), text(r.status), int(r.createdAt), int(r.updatedAt), blob(r.body), blob(r.tag)];
const stored = ([seq, messageId, messageType, contentType, toolCallId, status, createdAt, updatedAt, body, tag]) =>
  ({ seq, record: { messageId, messageType, contentType, toolCallId, status, body, createdAt, updatedAt, tag } });

export const displayStore = Object.fromEntries(Object.entries({
  insert(scope, id, records) {
    checkContiguous(records);
    if (!records.length) return { tag: "stored" };
    const k = key(scope, id);
    return write(() => {
      const [[last]] = rows(`SELECT COALESCE(MAX(seq), 0) ${DISPLAY}`, k);
      if (records[0].seq !== last + 1) return { tag: "out-of-sequence", val: last };
      sql.executeBatch(records.map((r) => ({
        sql: `INSERT INTO display VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
        params: [...k, ...recordParams(r)],
      })));
      return { tag: "stored" };
    });
  },
  byToolCallId(scope, id, toolCallId) {
    return rows(`SELECT ${RECORD} ${DISPLAY} AND tool_call_id = ?4 ORDER BY seq`, [...key(scope, id), text(toolCallId)]).map(stored);
  },
  update(scope, id, record) {
    const changed = sql.execute(
      `UPDATE display SET message_id = ?5, message_type = ?6, content_type = ?7, tool_call_id = ?8, status = ?9,
         created_at = ?10, updated_at = ?11, body = ?12, tag = ?13 WHERE ${KEY} AND conversation_id = ?3 AND seq = ?4`,
      [...key(scope, id), ...recordParams(record)]);
    if (changed === 0) throw new Fail("not-found");
  },
  list(scope, id, after, limit) {
    return rows(`SELECT ${RECORD} ${DISPLAY} AND seq > ?4 ORDER BY seq LIMIT ?5`, [...key(scope, id), int(after), int(limit)]).map(stored);
  },
  findByStatus(statuses, after, limit) {
    if (!statuses.length) return [];
    // ?1 limit, ?2..?5 the position after which to start (null: from the start), ?6... statuses.
    const position = after ? [...key(after.scope, after.conversationId), int(after.seq)] : [null, null, null, null].map(text);
    const found = rows(
      `SELECT tenant, scope_user, conversation_id, ${RECORD} FROM display
       WHERE status IN (${statuses.map((_, i) => `?${6 + i}`).join(", ")})
         AND (?2 IS NULL OR (tenant, scope_user, conversation_id, seq) > (?2, ?3, ?4, ?5))
       ORDER BY tenant, scope_user, conversation_id, seq LIMIT ?1`,
      [int(limit), ...position, ...statuses.map(text)]);
    return found.map(([tenant, user, conversationId, ...r]) => ({ scope: { tenant, user }, conversationId, stored: stored(r) }));
  },
}).map(([name, fn]) => [name, guarded(fn)]));
