// The session page's only style sheet, inlined into the page: no font, image or sheet is fetched.
// One column on a phone; on a wide screen the sequence and type sit in a left gutter.
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #fff; --soft: #f6f8fa;
  --ins: #1a7f37; --ins-bg: #dafbe1; --del: #cf222e; --del-bg: #ffebe9; --accent: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --bg: #0d1117;
  --soft: #161b22; --ins: #3fb950; --ins-bg: #12261e; --del: #f85149; --del-bg: #25171c; --accent: #4493f8; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 76rem; padding: 1rem; font: 15px/1.5 system-ui, sans-serif; color: var(--fg);
  background: var(--bg); overflow-wrap: anywhere; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: 0 0 .5rem; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; font-family: ui-monospace, monospace; }
.hint, .note, footer, time { color: var(--muted); font-size: .85rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; }
.timeline { list-style: none; margin: 1rem 0; padding: 0; border-left: 2px solid var(--line); }
.event { position: relative; margin: 0 0 .75rem; padding: .5rem .75rem; border: 1px solid var(--line);
  border-radius: 6px; margin-left: .75rem; background: var(--bg); }
.event::before { content: ""; position: absolute; left: -1.2rem; top: 1rem; width: .6rem; height: .6rem;
  border-radius: 50%; background: var(--line); }
.event:target { outline: 2px solid var(--accent); }
.head { display: flex; flex-wrap: wrap; gap: .25rem .75rem; align-items: baseline; }
.seq { font: 600 .95rem ui-monospace, monospace; color: var(--accent); text-decoration: none; }
.type { font-weight: 600; }
.body p { margin: .25rem 0; }
.role { font-weight: 600; text-transform: capitalize; }
pre { margin: .25rem 0; padding: .5rem; background: var(--soft); border-radius: 4px; overflow-x: auto;
  white-space: pre-wrap; }
pre.diff { white-space: pre; }
.diff span { display: block; } .diff .ins { background: var(--ins-bg); color: var(--ins); }
.diff .del { background: var(--del-bg); color: var(--del); } .diff .hunk { color: var(--accent); }
.diff .file { font-weight: 600; }
.num .ins { color: var(--ins); } .num .del { color: var(--del); } .bad { color: var(--del); font-weight: 600; }
.event.t-session_checkpoint { border-color: var(--accent); }
.event.t-session_rewind, .event.t-session_fork { background: var(--soft); }
details > summary { cursor: pointer; }
.files { border-collapse: collapse; margin: .5rem 0; }
.files td { padding: .1rem .5rem .1rem 0; vertical-align: top; }
.files .path { font-family: ui-monospace, monospace; }
.change-created td:first-child, .action-t-restore td:first-child { color: var(--ins); }
.change-deleted td:first-child, .action-t-delete td:first-child { color: var(--del); }
.change-unknown td:first-child, .action-t-skip td:first-child { color: var(--muted); }
@media (min-width: 48rem) {
  .event { display: grid; grid-template-columns: 11rem 1fr; gap: 1rem; }
  .head { flex-direction: column; gap: 0; }
}
`;
