// Stand-in for @silentbot1/nat-api (see ../../README.md): webtorrent maps its port through UPnP
// and NAT-PMP by default, which webtorrent-cli cannot switch off. On a rack that sends SSDP and
// NAT-PMP packets into the experiment's network while it runs, and its unmapping at exit waits
// for answers no rack gateway gives (5.6-10 s per client, 0.1 s without). webtorrent creates
// its NAT traversal only when this export is a function (`typeof NatAPI === 'function'`,
// webtorrent 3.0.21 index.js), so exporting null leaves it out.
export default null
