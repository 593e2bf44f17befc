import { describe, expect, it } from 'vitest';

import { isCloudReachable, isLoopbackUrl } from './urls';

// Hosts as an operator (or a .env file in a checked-out repository) could write them in a service URL.
// The answer decides whether svc sends the admin credential over plaintext http:// without --allow-http
// and trusts a URL from a file without a prompt, so a wrong `true` leaks the credential to another host.
describe('isLoopbackUrl', () => {
  it.each([
    // Names that merely start or end like a loopback host are ordinary DNS names anyone can register.
    ['127.evil.example', false],
    ['127.0.0.1.evil.example', false],
    ['localhost.evil.example', false],
    ['evil.localhost', false],
    ['127.attacker.example', false],
    // Not in 127.0.0.0/8 or ::1.
    ['128.0.0.1', false],
    ['126.255.255.255', false],
    ['[::2]', false],
    ['[::127.0.0.1]', false],
    ['localhost..', false],
    // The loopback addresses and the name localhost.
    ['localhost', true],
    ['LOCALHOST', true],
    ['localhost.', true],
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['127.255.255.255', true],
    ['127.0.0.1.', true],
    ['[::1]', true],
    ['[0:0:0:0:0:0:0:1]', true],
    // Other spellings of 127.0.0.1 that the URL parser (and the OS resolver) turn into 127.0.0.1.
    ['0x7f.1', true],
    ['2130706433', true],
    ['0177.0.0.1', true],
    // 127.0.0.1 written as an IPv4-mapped IPv6 address: the connection goes to 127.0.0.1.
    ['[::ffff:127.0.0.1]', true],
    // The unspecified addresses: a connection to them reaches this machine (or fails), never another host.
    ['0.0.0.0', true],
    ['0', true],
    ['[::]', true],
  ])('%s -> %s', (host, loopback) => {
    expect(isLoopbackUrl(`http://${host}:7777`)).toBe(loopback);
    expect(isLoopbackUrl(`https://${host}/base/path`)).toBe(loopback);
  });
});

describe('isCloudReachable', () => {
  it.each([
    ['https://svc.example.com', true],
    // A public name now, not loopback: what it resolves to is up to its owner.
    ['https://127.attacker.example', true],
    ['https://localhost', false],
    ['https://127.0.0.1', false],
    // Names under .localhost are never in public DNS, so no cloud app reaches them.
    ['https://app.localhost', false],
    ['https://app.localhost.', false],
    ['http://svc.example.com', false],
  ])('%s -> %s', (url, reachable) => {
    expect(isCloudReachable(url)).toBe(reachable);
  });
});
