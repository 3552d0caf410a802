import { pgBackend, pgUrl, useSchemas } from "./postgres.js";
import { storesOn } from "./store-backends.js";

// Imported first by a postgres-*-suites file, before the suites it runs: from then on each store the fixture
// opens on a `root` keeps its sessions in PostgreSQL, one schema per store folder (the same folder reopened is
// the same schema, as on disk), all dropped when the file ends. The workspace stays on this machine's disk.
const schemas = useSchemas("suites");
const schemaOf = new Map<string, string>();

function schemaFor(root: string): string {
  let schema = schemaOf.get(root);
  if (schema === undefined) {
    schema = schemas.make();
    schemaOf.set(root, schema);
  }
  return schema;
}

/** Runs `sql` (`$S` is the store's schema, `$1` the session's id) with `params` after the id. */
async function onRows<R extends object>(root: string, id: string, sql: string, params: unknown[] = []) {
  const text = sql.replaceAll("$S", `"${schemaFor(root)}"`);
  return (await schemas.admin().query<R>(text, [id, ...params])).rows;
}
const incarnation = "(SELECT incarnation FROM $S.sessions WHERE id = $1)";

storesOn({
  kind: "postgres",
  on: (root) => pgBackend(schemaFor(root)),
  cliStore(root) {
    const url = new URL(pgUrl());
    url.searchParams.set("schema", schemaFor(root));
    return ["--store", url.toString()];
  },
  byHand: {
    async logBytes(root, id) {
      const sql = `SELECT string_agg(line || E'\\n', '' ORDER BY sequence) AS log FROM $S.events
                    WHERE incarnation = ${incarnation}`;
      const [row] = await onRows<{ log: string | null }>(root, id, sql);
      return Buffer.from(row?.log ?? "", "utf8");
    },
    async blobIsStored(root, id, hash) {
      const sql = `SELECT 1 FROM $S.blobs WHERE incarnation = ${incarnation} AND hash = $2`;
      return (await onRows(root, id, sql, [hash])).length === 1;
    },
    async damageBlob(root, id, hash, bytes) {
      const sql = `UPDATE $S.blobs SET stored = $3 WHERE incarnation = ${incarnation} AND hash = $2 RETURNING 1`;
      if ((await onRows(root, id, sql, [hash, Buffer.from(bytes)])).length !== 1)
        throw new Error(`blob ${hash} is not stored`);
    },
    async removeBlob(root, id, hash) {
      const sql = `DELETE FROM $S.blobs WHERE incarnation = ${incarnation} AND hash = $2 RETURNING 1`;
      if ((await onRows(root, id, sql, [hash])).length !== 1) throw new Error(`blob ${hash} is not stored`);
    },
    async blobHashes(root, id) {
      const sql = `SELECT hash FROM $S.blobs WHERE incarnation = ${incarnation} ORDER BY hash`;
      return (await onRows<{ hash: string }>(root, id, sql)).map((row) => row.hash);
    },
    async setLine(root, id, sequence, line) {
      const sql = `UPDATE $S.events SET line = $3 WHERE incarnation = ${incarnation} AND sequence = $2 RETURNING 1`;
      if ((await onRows(root, id, sql, [sequence, line])).length !== 1) throw new Error(`no line ${sequence}`);
    },
    async recordText(root, id, name) {
      const sql = `SELECT value FROM $S.records WHERE incarnation = ${incarnation} AND name = $2`;
      return (await onRows<{ value: string }>(root, id, sql, [name]))[0]?.value;
    },
    async setRecordText(root, id, name, text) {
      const sql = `INSERT INTO $S.records (incarnation, name, value) SELECT ${incarnation}, $2, $3
                   ON CONFLICT (incarnation, name) DO UPDATE SET value = EXCLUDED.value`;
      await onRows(root, id, sql, [name, text]);
    },
    async sessionText(root, id) {
      const [row] = await onRows<{ record: string }>(root, id, "SELECT record FROM $S.sessions WHERE id = $1");
      if (row === undefined) throw new Error(`no session ${id}`);
      return row.record;
    },
    async setSessionText(root, id, text) {
      const sql = "UPDATE $S.sessions SET record = $2 WHERE id = $1 RETURNING 1";
      if ((await onRows(root, id, sql, [text])).length !== 1) throw new Error(`no session ${id}`);
    },
  },
});
