// A name on Linux is bytes, not text. Inside the library (and on the tape) a path is a string in which every
// byte that is not part of valid UTF-8 stands as one lone low surrogate, U+DC80 + (byte - 0x80): the same
// mapping as Python's "surrogateescape" (PEP 383). Valid UTF-8 never decodes to a lone surrogate, so the
// mapping is one to one, a name that is valid UTF-8 is the plain string it always was (tapes written before
// read unchanged), and JSON keeps the escape as `\udcff` text (docs/ARCHITECTURE.md, "On disk").

/** First and last code unit that stands for one byte of a name that is not UTF-8. */
const ESCAPE_FIRST = 0xdc80;
const ESCAPE_LAST = 0xdcff;
const SURROGATE = /[\ud800-\udfff]/;

/** The name (or path) whose bytes these are, every byte kept: see the comment at the top of this file. */
export function nameFromBytes(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  // The decoder puts U+FFFD where the bytes are not UTF-8; a name that holds U+FFFD itself is looked at too.
  if (!text.includes("\ufffd")) return text;
  let out = "";
  for (let i = 0; i < bytes.length; ) {
    const length = validSequenceAt(bytes, i);
    if (length === 0) {
      out += String.fromCharCode(ESCAPE_FIRST + bytes[i]! - 0x80);
      i++;
    } else {
      out += Buffer.from(bytes.subarray(i, i + length)).toString("utf8");
      i += length;
    }
  }
  return out;
}

/** The bytes of a name made by {@link nameFromBytes}; a string with no escaped byte is its UTF-8. */
export function bytesOfName(name: string): Buffer {
  if (!SURROGATE.test(name)) return Buffer.from(name, "utf8");
  const parts: Buffer[] = [];
  let run = "";
  for (let i = 0; i < name.length; i++) {
    const unit = name.charCodeAt(i);
    const pairs = unit >= 0xd800 && unit <= 0xdbff && isLow(name.charCodeAt(i + 1));
    if (pairs) {
      run += name.slice(i, i + 2);
      i++;
    } else if (unit >= ESCAPE_FIRST && unit <= ESCAPE_LAST) {
      parts.push(Buffer.from(run, "utf8"), Buffer.of(unit - ESCAPE_FIRST + 0x80));
      run = "";
    } else run += name[i]; // any other lone surrogate cannot come from a name: UTF-8 gives it U+FFFD
  }
  parts.push(Buffer.from(run, "utf8"));
  return Buffer.concat(parts);
}

/**
 * What to hand the OS for `path`: the string itself when every byte of it is UTF-8 (the common case, no
 * copy), else its bytes.
 */
export function osPath(path: string): string | Buffer {
  return hasEscapedBytes(path) ? bytesOfName(path) : path;
}

/** True when the name holds a byte that is not UTF-8 (so it is shown or stored in its escaped form). */
export function hasEscapedBytes(name: string): boolean {
  if (!SURROGATE.test(name)) return false;
  for (let i = 0; i < name.length; i++) {
    const unit = name.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && isLow(name.charCodeAt(i + 1))) i++;
    else if (unit >= ESCAPE_FIRST && unit <= ESCAPE_LAST) return true;
  }
  return false;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/**
 * The length of the well-formed UTF-8 sequence starting at `i` (Unicode's table 3-7: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 when the byte there starts none.
 */
function validSequenceAt(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  const at = (k: number) => (i + k < bytes.length ? bytes[i + k]! : -1);
  const cont = (k: number) => at(k) >= 0x80 && at(k) <= 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const b1 = at(1);
    const low = b0 === 0xe0 ? 0xa0 : 0x80;
    const high = b0 === 0xed ? 0x9f : 0xbf;
    return b1 >= low && b1 <= high && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const b1 = at(1);
    const low = b0 === 0xf0 ? 0x90 : 0x80;
    const high = b0 === 0xf4 ? 0x8f : 0xbf;
    return b1 >= low && b1 <= high && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}
