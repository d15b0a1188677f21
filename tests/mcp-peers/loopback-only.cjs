// Preload for Node servers that listen on every interface (server-everything's `app.listen(PORT)`):
// `node --require loopback-only.cjs SERVER.js ...` makes every TCP listen that names no host bind
// 127.0.0.1 instead, and prints "loopback-only: listening on 127.0.0.1:PORT" to stderr once it is
// bound, so a test can start the server with PORT=0 and read the real port from stderr.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (first && typeof first === "object" && first.path === undefined && !first.host) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const a = this.address();
    if (a && typeof a === "object") process.stderr.write(`loopback-only: listening on ${a.address}:${a.port}\n`);
  });
  return listen.apply(this, args);
};
