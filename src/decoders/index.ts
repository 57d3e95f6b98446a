/**
 * The decoders' public face: what a source or a command needs to read a capture format. The
 * formats themselves and how each is read live in one table, src/decoders/registry.ts.
 */
export {
  CAPTURE_FORMATS,
  DECODERS,
  createDatagramDecoder,
  createStreamDecoder,
  formatFromFileName,
  formatList,
  isCaptureFormat,
  mqttFormats,
  registerDecoder,
  type CaptureFormat,
  type DecoderEntry,
  type FileHint,
  type MessageFormat,
} from './registry.js';
