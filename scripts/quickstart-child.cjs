// Preloaded (`node --require`) into every process npm start runs, to keep npm start in charge of it:
//
// - It tells npm start which ports this process listens on, over the IPC channel npm start opened. Only then does
//   npm start ask that port for readiness: a server that took the port meanwhile (another user's, another checkout's)
//   answers too, and svc would be sent there with this checkout's key.
// - When npm start is gone without stopping it (kill -9, an OOM kill), this process stops as on SIGTERM, rather than
//   keep the port and the data directory with nobody to stop it. It notices within a second (its parent changes), or
//   at once when it writes to the pipe npm start read (EPIPE): what it writes then is lost, not fatal (pino's own
//   destination already drops a broken pipe; these are the others').
const diagnostics = require('node:diagnostics_channel');

const parent = process.ppid;
let orphaned = false;
const watch = setInterval(() => process.ppid !== parent && stop(), 1000);
watch.unref();

function stop() {
  if (!orphaned) {
    orphaned = true;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }
}

for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code !== 'EPIPE') {
      throw error;
    }
    stop();
  });
}

if (process.send) {
  // The channel must not keep the process alive: the app decides when it ends.
  process.channel.unref();
  diagnostics.subscribe('tracing:net.server.listen:asyncEnd', ({ server }) => {
    const address = server.address();
    if (address && typeof address === 'object') {
      // A parent gone meanwhile is noticed above; the message is then simply lost.
      process.send({ listening: address.port }, undefined, undefined, () => undefined);
    }
  });
}
