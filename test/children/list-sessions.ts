// Child: lists every session under argv[2] and prints how many came back, and how many unreadable.
import { SessionStore } from "../../src/index.js";

const store = new SessionStore({ root: process.argv[2]! });
const sessions = await store.list();
const unreadable = sessions.filter((s) => s.unreadable);
console.log(
  JSON.stringify({ listed: sessions.length, unreadable: unreadable.length, first: unreadable[0]?.unreadable }),
);
await store.close();
