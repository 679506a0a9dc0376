// The Node side of bench/rsmq_clients.py: the reference client (npm `rsmq`) and `rsmq-worker`.
//   node bench/rsmq_clients.js HOST PORT DB NS SCENARIO QNAME N CONCURRENCY
// SCENARIO: send | recvdel | worker. Prints one JSON line {"seconds": ...}.
"use strict";
const RedisSMQ = require("rsmq");

const [host, port, db, ns, scenario, qname, n, conc] = process.argv.slice(2);
const total = Number(n);
const concurrency = Number(conc);
const rsmq = new RedisSMQ({ host, port: Number(port), db: Number(db), ns });

async function loops(body) {
  let left = total;
  const one = async () => {
    while (left > 0) {
      left -= 1;
      await body();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
}

async function main() {
  await rsmq.getQueueAttributesAsync({ qname }); // connected, scripts loaded
  const start = process.hrtime.bigint();
  if (scenario === "send") {
    await loops(() => rsmq.sendMessageAsync({ qname, message: "x".repeat(100) }));
  } else if (scenario === "recvdel") {
    await loops(async () => {
      const msg = await rsmq.receiveMessageAsync({ qname });
      if (msg.id) await rsmq.deleteMessageAsync({ qname, id: msg.id });
    });
  } else if (scenario === "worker") {
    const RSMQWorker = require("rsmq-worker");
    const worker = new RSMQWorker(qname, { rsmq, interval: [0, 0.05], timeout: 0, autostart: false });
    let done = 0;
    await new Promise((resolve) => {
      worker.on("message", (msg, next) => {
        done += 1;
        next(); // deletes the message
        if (done === total) resolve();
      });
      worker.start();
    });
    // the last delete is sent after next(); wait until the queue is empty
    for (;;) {
      const attrs = await rsmq.getQueueAttributesAsync({ qname });
      if (attrs.msgs === 0) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    worker.stop();
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  process.stdout.write(JSON.stringify({ seconds }) + "\n");
  rsmq.quit();
  process.exit(0);
}
main();
