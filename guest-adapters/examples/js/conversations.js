// `conversation-store`: message histories in SQL. A conversation is one row of
// `example_conversations` (version, last seq, meta) plus one row per message
// in `example_messages`. Every write is one transaction (`write`), in which
// the contract's checks run in its order: not-found, already-stored,
// conflict, out-of-sequence.
import {
  NULL, StoreError, batch, blob, checkContiguous, execute, int, invalidInput, key, notFound, query, storage, text, write,
} from "./db.js";

const ROLES = ["system", "developer", "user", "assistant", "tool"];
const INFO = "id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, last_seq, version";
const CONVERSATION = "FROM example_conversations WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3";
const MESSAGES = "FROM example_messages WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3";
const MESSAGE = "seq, id, role, created_at, content, tag";

function info([id, tenant, user, content, tag, createdAt, updatedAt, lastSeq, version]) {
  return {
    id, scope: { tenant, user }, meta: { content, tag }, createdAt, updatedAt,
    messageCount: lastSeq, // seqs are contiguous from 1
    lastSeq, version,
  };
}

function findInfo(k) {
  const rows = query(`SELECT ${INFO} ${CONVERSATION}`, k);
  return rows.length ? info(rows[0]) : null;
}

/** The conversation's version and last seq, or `not-found`. */
function history(k) {
  const rows = query(`SELECT version, last_seq ${CONVERSATION}`, k);
  if (!rows.length) throw notFound();
  const [version, lastSeq] = rows[0];
  return { version, lastSeq };
}

function checkVersion(expected, version) {
  if (expected !== null && expected !== version) {
    throw new StoreError("conflict", { expectedVersion: expected, actualVersion: version });
  }
}

/** The statements that store `messages` and then set the conversation's counters. */
function storeStatements(k, messages, version, lastSeq, now) {
  const inserts = messages.map(({ seq, message: m }) => [
    `INSERT INTO example_messages (tenant, scope_user, conversation_id, ${MESSAGE}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
    [...k, int(seq), text(m.id), int(ROLES.indexOf(m.role)), int(m.createdAt), blob(m.content), blob(m.tag)],
  ]);
  const update = [
    `UPDATE example_conversations SET version = ?4, last_seq = ?5, updated_at = ?6 WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3`,
    [...k, int(version), int(lastSeq), int(now)],
  ];
  return [...inserts, update];
}

export const conversationStore = {
  open(scope, conversationId, meta, now) {
    const k = key(scope, conversationId);
    const found = findInfo(k);
    if (found) return found;
    // A concurrent open of the same id makes the insert a no-op.
    execute(
      `INSERT INTO example_conversations (tenant, scope_user, id, created_at, updated_at, version, last_seq, meta_content, meta_tag)
       VALUES (?1, ?2, ?3, ?4, ?4, 0, 0, ?5, ?6) ON CONFLICT DO NOTHING`,
      [...k, int(now), blob(meta.content), blob(meta.tag)],
    );
    return findInfo(k) ?? (() => { throw storage("open: the conversation is missing right after it was created"); })();
  },

  info(scope, conversationId) {
    return findInfo(key(scope, conversationId)) ?? (() => { throw notFound(); })();
  },

  updateMeta(scope, conversationId, meta) {
    const changed = execute(
      `UPDATE example_conversations SET meta_content = ?4, meta_tag = ?5 WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3`,
      [...key(scope, conversationId), blob(meta.content), blob(meta.tag)],
    );
    if (changed === 0) throw notFound();
  },

  append(scope, conversationId, messages, expectedVersion, now) {
    checkContiguous("append", messages.map((m) => m.seq));
    const k = key(scope, conversationId);
    return write(() => {
      const { version, lastSeq } = history(k);
      const seqs = [];
      messages.forEach(({ message }, index) => {
        const rows = query(`SELECT seq ${MESSAGES} AND id = ?4`, [...k, text(message.id)]);
        if (rows.length) seqs.push({ index, seq: rows[0][0] });
      });
      if (seqs.length) return { tag: "already-stored", val: { seqs, version } };
      checkVersion(expectedVersion, version);
      if (!messages.length) return { tag: "stored", val: version };
      if (messages[0].seq !== lastSeq + 1) return { tag: "out-of-sequence", val: lastSeq };
      batch(storeStatements(k, messages, version + 1, messages[messages.length - 1].seq, now));
      return { tag: "stored", val: version + 1 };
    });
  },

  replace(scope, conversationId, messages, expectedVersion, now) {
    checkContiguous("replace", messages.map((m) => m.seq));
    if (messages.length && messages[0].seq !== 1) throw invalidInput("replace: messages must be numbered from seq 1");
    const k = key(scope, conversationId);
    return write(() => {
      const { version } = history(k);
      checkVersion(expectedVersion, version);
      batch([[`DELETE ${MESSAGES}`, k], ...storeStatements(k, messages, version + 1, messages.length, now)]);
      return version + 1;
    });
  },

  load(scope, conversationId, range, limit) {
    const k = key(scope, conversationId);
    history(k); // not-found
    let rows;
    if (range.tag === "after") {
      rows = query(`SELECT ${MESSAGE} ${MESSAGES} AND seq > ?4 ORDER BY seq LIMIT ?5 + 0`, [...k, int(range.val), int(limit)]);
    } else if (range.tag === "before") {
      rows = query(`SELECT ${MESSAGE} ${MESSAGES} AND seq < ?4 ORDER BY seq DESC LIMIT ?5 + 0`, [...k, int(range.val), int(limit)]).reverse();
    } else {
      rows = query(`SELECT ${MESSAGE} ${MESSAGES} ORDER BY seq DESC LIMIT ?4 + 0`, [...k, int(limit)]).reverse();
    }
    return rows.map(([seq, id, role, createdAt, content, tag]) => {
      if (!ROLES[role]) throw storage(`load: message seq ${seq} has an unknown role code ${role}`);
      return { seq, message: { id, role: ROLES[role], createdAt, content, tag } };
    });
  },

  truncateAfter(scope, conversationId, seq, expectedVersion, now) {
    const k = key(scope, conversationId);
    return write(() => {
      const { version, lastSeq } = history(k);
      if (seq >= lastSeq) return { removed: 0, version }; // nothing to remove: no version bump
      checkVersion(expectedVersion, version);
      const removed = execute(`DELETE ${MESSAGES} AND seq > ?4`, [...k, int(seq)]);
      execute(
        `UPDATE example_conversations SET version = ?4, last_seq = ?5, updated_at = ?6 WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3`,
        [...k, int(version + 1), int(seq), int(now)],
      );
      return { removed, version: version + 1 };
    });
  },

  delete(scope, conversationId) {
    const k = key(scope, conversationId);
    return write(() => {
      const removed = [
        `DELETE ${CONVERSATION}`,
        `DELETE ${MESSAGES}`,
        "DELETE FROM example_display WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3",
      ].map((statement) => execute(statement, k));
      return removed.some((n) => n > 0);
    });
  },

  list(scope, after, limit) {
    const rows = query(
      `SELECT ${INFO} FROM example_conversations WHERE tenant = ?1 AND scope_user = ?2 AND (?3 IS NULL OR id > ?3)
       ORDER BY id LIMIT ?4 + 0`,
      [text(scope.tenant), text(scope.user), after === null ? NULL : text(after), int(limit)],
    );
    return rows.map(info);
  },
};
