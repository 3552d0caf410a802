import { randomBytes } from "node:crypto";

/** What the CLI writes to: process.stdout / process.stderr, or a test's collector. */
export interface TextSink {
  write(text: string): unknown;
}

/**
 * Marks the control sequences the CLI writes itself (its colours, the progress line's redraw): random per
 * process, so no title, payload, file name or content can carry it. {@link terminalText} lets a marked
 * sequence through and shows every other control as a visible escape (docs/ARCHITECTURE.md, "Session view").
 */
const OWN = `\u{F8FF}${randomBytes(8).toString("hex")}`;
const OWN_SEQUENCE = new RegExp(`${OWN}(\r|\x1b[[0-9;]*[A-Za-z])`, "g");

/**
 * What a terminal acts on: C0 controls but newline and tab (a carriage return or backspace overwrites what
 * was shown), DEL, C1 controls (U+009B is a CSI, U+009D an OSC on many terminals), and the bidi controls
 * that reorder a line (U+202A–U+202E, U+2066–U+2069, LRM, RLM, ALM) and the Unicode line separators.
 */
const STEERING = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visibleEscape(c: string): string {
  if (c === "\r") return "\\r";
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * Text as it may reach a terminal: every control but newline and tab shown as a visible escape (`\x1b`,
 * `\x9b`, `\u202e`), so no window title, clipboard write, screen clear, colour or reordering from the tape
 * or the workspace takes effect; only the sequences the CLI marked as its own stay. Not used for `--json`,
 * which stays exact.
 */
export function terminalText(text: string): string {
  let shown = "";
  let from = 0;
  for (const own of text.matchAll(OWN_SEQUENCE)) {
    shown += text.slice(from, own.index).replace(STEERING, visibleEscape) + own[1];
    from = own.index + own[0].length;
  }
  return shown + text.slice(from).replace(STEERING, visibleEscape);
}

/** A sink that writes {@link terminalText}: what every human-readable line of the CLI goes through. */
export function terminalSink(sink: TextSink): TextSink {
  return { write: (text: string) => sink.write(terminalText(text)) };
}

/** ANSI styling that turns itself off: the same calls print plain text when piped or under NO_COLOR. */
export interface Style {
  readonly enabled: boolean;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  bold(text: string): string;
  dim(text: string): string;
}

export function makeStyle(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (text: string) =>
    enabled ? `${OWN}\x1b[${open}m${text}${OWN}\x1b[${close}m` : text;
  return { enabled, green: wrap(32, 39), red: wrap(31, 39), yellow: wrap(33, 39), bold: wrap(1, 22), dim: wrap(2, 22) };
}

/**
 * Colour only for a terminal, and never when the user said no: NO_COLOR set to anything
 * non-empty (no-color.org), or a terminal that declares itself dumb.
 */
export function wantsColour(isTTY: boolean, env: Record<string, string | undefined>): boolean {
  if (!isTTY) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return env.TERM !== "dumb";
}

// The CLI's own colours take no room on screen, and a control from the tape takes its escape's width.
function visibleLength(text: string): number {
  return text.replace(OWN_SEQUENCE, "").replace(STEERING, visibleEscape).length;
}

/** Lines of a table with columns padded to their widest cell; "right" columns hold numbers. */
export function table(rows: readonly (readonly string[])[], align: readonly ("left" | "right")[] = []): string[] {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell));
    });
  return rows.map((row) =>
    row
      .map((cell, i) => {
        const pad = " ".repeat((widths[i] ?? 0) - visibleLength(cell));
        if (align[i] === "right") return pad + cell;
        return i === row.length - 1 ? cell : cell + pad; // no trailing blanks at the end of a line
      })
      .join("  "),
  );
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** "42s ago", "5m ago", "3h ago", "2d ago"; a date once it is over a month old. */
export function formatAge(then: Date, now: Date): string {
  const seconds = Math.floor((now.getTime() - then.getTime()) / 1000);
  if (Number.isNaN(seconds)) return "unknown";
  if (seconds < 5) return "just now";
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ago`;
  const days = Math.floor(hours / 24);
  if (days < 31) return `${days}d ago`;
  return then.toISOString().slice(0, 10);
}

/** An ISO timestamp cut to the second, still in UTC and marked so. */
export function formatTime(iso: string): string {
  return iso.replace(/\.\d+Z$/, "Z");
}

/** One line, at most `max` characters: newlines and runs of blanks fold to one space. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : flat.slice(0, Math.max(0, max - 1)) + "…";
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * A single status line on stderr that rewrites itself, for operations that take a while.
 * Silent unless stderr is a terminal, so logs and pipes never collect its carriage returns.
 */
export class Progress {
  private shown = false;
  private lastWrite = 0;

  constructor(
    private readonly sink: TextSink,
    readonly enabled: boolean,
  ) {}

  update(text: string, force = false): void {
    if (!this.enabled) return;
    const now = Date.now();
    // A redraw per item would flood a slow terminal; ten a second reads as live.
    if (!force && this.shown && now - this.lastWrite < 100) return;
    this.lastWrite = now;
    this.shown = true;
    this.sink.write(`${OWN}\r${OWN}\x1b[2K${text}`);
  }

  clear(): void {
    if (!this.enabled || !this.shown) return;
    this.shown = false;
    this.sink.write(`${OWN}\r${OWN}\x1b[2K`);
  }
}
