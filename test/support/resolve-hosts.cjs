'use strict';
/*
 * Preloaded into a child process (NODE_OPTIONS=--require <this file>): name lookups for the names in
 * TEST_RESOLVE_HOSTS (JSON, {"name": "address"}) answer with that address, as a line in /etc/hosts
 * would, so a test can give a made-up host name a real address without touching the system resolver.
 * Every other name goes to the real resolver. Node's sockets (and so fetch) look names up through
 * dns.lookup at connect time, which is what is replaced here.
 */
const dns = require('node:dns');
const { isIP } = require('node:net');

const hosts = new Map(
  Object.entries(JSON.parse(process.env.TEST_RESOLVE_HOSTS || '{}')).map(([name, address]) => [name.toLowerCase(), address]),
);
const realLookup = dns.lookup;

dns.lookup = function lookup(hostname, options, callback) {
  if (typeof options === 'function') {
    callback = options;
    options = {};
  } else if (typeof options === 'number') {
    options = { family: options };
  }
  const address = typeof hostname === 'string' ? hosts.get(hostname.toLowerCase()) : undefined;
  if (address === undefined) {
    return realLookup.call(this, hostname, options, callback);
  }
  const family = isIP(address);
  process.nextTick(() => (options && options.all ? callback(null, [{ address, family }]) : callback(null, address, family)));
  return {};
};
