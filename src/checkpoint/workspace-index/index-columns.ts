// The index's base record by columns (docs/ARCHITECTURE.md, "Workspace index", the records; docs/format.md): each
// field of every entry together, times and inode numbers as differences from the entry before, paths as what they
// share with the one before and the rest. Rows of 11 fields repeated the same digits for every file; by columns
// the deflated base of a 5,000-file workspace took 262 KB in base64 instead of 365.

/** One entry as a row: [path, kind, size, mtimeNs, ctimeNs, ino, mode, hash or link target or null, flags, uid?,
 * gid?]; the form of deltas, and of bases written before columns. */
export type Row = [
  string,
  "f" | "d" | "l" | "o",
  number,
  string,
  string,
  string,
  number,
  string | null,
  number,
  number?,
  number?,
];

/** The entries of a base by columns, in the entries' order. */
export interface Columns {
  /** Characters a path shares with the path before it, and the rest of it. */
  shared: number[];
  rest: string[];
  /** One character a path: f, d, l or o. */
  kind: string;
  size: number[];
  /** mtimeNs minus the entry before's (the first minus 0), in decimal. */
  mtime: string[];
  /** ctimeNs minus mtimeNs, in decimal ("0" most often). */
  ctime: string[];
  /** ino minus the entry before's, in decimal. */
  ino: string[];
  mode: number[];
  value: (string | null)[];
  flags: number[];
  /** null where the row has no owner (written before owners were kept). */
  uid: (number | null)[];
  gid: (number | null)[];
}

export function columnsOf(rows: readonly Row[]): Columns {
  const columns: Columns = {
    shared: [],
    rest: [],
    kind: "",
    size: [],
    mtime: [],
    ctime: [],
    ino: [],
    mode: [],
    value: [],
    flags: [],
    uid: [],
    gid: [],
  };
  const kinds: string[] = [];
  let path = "";
  let mtime = 0n;
  let ino = 0n;
  for (const [next, kind, size, mtimeNs, ctimeNs, inode, mode, value, flags, uid, gid] of rows) {
    const shared = sharedLength(path, next);
    columns.shared.push(shared);
    columns.rest.push(next.slice(shared));
    path = next;
    kinds.push(kind);
    columns.size.push(size);
    const m = BigInt(mtimeNs);
    columns.mtime.push(String(m - mtime));
    mtime = m;
    columns.ctime.push(String(BigInt(ctimeNs) - m));
    const i = BigInt(inode);
    columns.ino.push(String(i - ino));
    ino = i;
    columns.mode.push(mode);
    columns.value.push(value);
    columns.flags.push(flags);
    columns.uid.push(uid ?? null);
    columns.gid.push(gid ?? null);
  }
  columns.kind = kinds.join("");
  return columns;
}

/** The rows back, or undefined when the columns are not all arrays of one length and the right kinds of value. */
export function rowsOf(columns: unknown): Row[] | undefined {
  if (!isColumns(columns)) return undefined;
  const rows: Row[] = [];
  let path = "";
  let mtime = 0n;
  let ino = 0n;
  try {
    for (let i = 0; i < columns.shared.length; i++) {
      path = path.slice(0, columns.shared[i]) + columns.rest[i];
      mtime += BigInt(columns.mtime[i]!);
      ino += BigInt(columns.ino[i]!);
      const kind = columns.kind[i] as Row[1];
      const row: Row = [
        path,
        kind,
        columns.size[i]!,
        String(mtime),
        String(mtime + BigInt(columns.ctime[i]!)),
        String(ino),
        columns.mode[i]!,
        columns.value[i]!,
        columns.flags[i]!,
      ];
      const uid = columns.uid[i];
      const gid = columns.gid[i];
      if (typeof uid === "number" && typeof gid === "number") row.push(uid, gid);
      rows.push(row);
    }
  } catch {
    return undefined; // a time or inode that is not a decimal integer
  }
  return rows;
}

function sharedLength(a: string, b: string): number {
  const most = Math.min(a.length, b.length);
  let n = 0;
  while (n < most && a.charCodeAt(n) === b.charCodeAt(n)) n++;
  // Never between the two halves of a surrogate pair: each part stays a well-formed string.
  if (n > 0 && n < most && isHighSurrogate(a.charCodeAt(n - 1))) n--;
  return n;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

function isColumns(value: unknown): value is Columns {
  const c = value as Partial<Columns> | null;
  if (typeof c !== "object" || c === null || !Array.isArray(c.shared)) return false;
  const n = c.shared.length;
  const arrays = [c.rest, c.size, c.mtime, c.ctime, c.ino, c.mode, c.value, c.flags, c.uid, c.gid];
  if (typeof c.kind !== "string" || c.kind.length !== n) return false;
  if (!arrays.every((array) => Array.isArray(array) && array.length === n)) return false;
  for (let i = 0; i < n; i++) {
    if (!Number.isInteger(c.shared[i]) || typeof c.rest![i] !== "string") return false;
    if (!"fdlo".includes(c.kind[i]!)) return false;
    if (typeof c.size![i] !== "number" || typeof c.mode![i] !== "number" || typeof c.flags![i] !== "number")
      return false;
    if (typeof c.mtime![i] !== "string" || typeof c.ctime![i] !== "string" || typeof c.ino![i] !== "string")
      return false;
    const v = c.value![i];
    if (v !== null && typeof v !== "string") return false;
  }
  return true;
}
