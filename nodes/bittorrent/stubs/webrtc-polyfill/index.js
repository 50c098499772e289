// Stand-in for webrtc-polyfill (see ../../README.md): the real one loads node-datachannel, whose
// native binary is downloaded from GitHub at install time. Exported as a runtime without WebRTC
// exports them (undefined): simple-peer then reports WebRTC as unsupported, and webtorrent-cli,
// which has no WebRTC peers anyway, talks TCP.
const scope = globalThis
export const RTCPeerConnection = scope.RTCPeerConnection
export const RTCSessionDescription = scope.RTCSessionDescription
export const RTCIceCandidate = scope.RTCIceCandidate
export default { RTCPeerConnection, RTCSessionDescription, RTCIceCandidate }
