// Drives the reference Node RSMQ client (npm `rsmq`) for tests/rsmq/test_interop_node.py:
// one JSON request per stdin line, {"op": "sendMessage", "args": {...}}, one JSON reply per
// stdout line, {"ok": result} or {"err": {"name": ..., "message": ...}}.
// Started as `node rsmq_driver.js HOST PORT DB NS [realtime]` with NODE_PATH at the npm cache folder.
"use strict";
const RedisSMQ = require("rsmq");
const readline = require("readline");

const [host, port, db, ns, mode] = process.argv.slice(2);
// The database goes at the top level: `options: {db}` is ignored by the client.
const rsmq = new RedisSMQ({ host, port: Number(port), db: Number(db), ns, realtime: mode === "realtime" });

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", async (line) => {
  const { op, args } = JSON.parse(line);
  let reply;
  try {
    const result = op === "listQueues" ? await rsmq.listQueuesAsync() : await rsmq[op + "Async"](args);
    reply = { ok: result };
  } catch (err) {
    reply = { err: { name: err.name, message: err.message } };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
lines.on("close", () => rsmq.quit());
