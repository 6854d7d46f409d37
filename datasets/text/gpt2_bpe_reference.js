// Runs the pinned gpt-3-encoder package's own encode() and writes one line per case:
// "<input file name>\t<the case's bytes in hex>\t<ids, space-separated>", for gpt2_bpe_parity to compare.
// Usage: node gpt2_bpe_reference.js <gpt-3-encoder directory> <output> <input>...
// A .jsonl input holds one document per line ({"text": ...}); any other input one case per line: a JSON
// string literal, or "hex:" and raw bytes in hex (for invalid UTF-8); "#" lines are comments.
'use strict';
const fs = require('fs');
const path = require('path');

const [directory, output, ...inputs] = process.argv.slice(2);
const {encode} = require(path.resolve(directory, 'index.js'));
// The WHATWG decoder: each maximal invalid UTF-8 subpart becomes U+FFFD (as C++ ReplaceInvalidUtf8);
// ignoreBOM keeps a leading U+FEFF as text, as the C++ encoder does.
const utf8 = new TextDecoder('utf-8', {ignoreBOM: true});

const lines = [];
for (const input of inputs) {
  const add = bytes => {
    const ids = encode(utf8.decode(bytes)).join(' ');
    lines.push([path.basename(input), Buffer.from(bytes).toString('hex'), ids].join('\t'));
  };
  for (const line of fs.readFileSync(input, 'utf8').split('\n')) {
    if (input.endsWith('.jsonl')) {
      if (line !== '') add(Buffer.from(JSON.parse(line).text, 'utf8'));
    } else if (line.startsWith('hex:')) {
      add(Buffer.from(line.slice(4), 'hex'));
    } else if (line !== '' && !line.startsWith('#')) {
      add(Buffer.from(JSON.parse(line), 'utf8'));
    }
  }
}
fs.writeFileSync(output, lines.join('\n') + '\n');
