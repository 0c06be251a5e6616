// Writes a .ksplat with GaussianSplats3D (the format's own viewer library), for tests/scenes/test_ksplat*.py and
// tests/data/make_ksplat.py: an outside writer, so that warpsplat's reader is checked against the format as its
// authors write it. Every splat is kept (alpha threshold 0).
//
// node gs3d_ksplat.mjs MODULES IN.ply OUT.ksplat LEVEL SH_DEGREE SECTION_SIZE BLOCK_SIZE BUCKET_SIZE
//   MODULES: a node_modules folder holding @mkkellogg/gaussian-splats-3d and three
//   SECTION_SIZE 0: one section; BLOCK_SIZE, BUCKET_SIZE: the library's defaults are 5.0 and 256
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, input, output, level, shDegree, sectionSize, blockSize, bucketSize] = process.argv.slice(2);
const url = (p) => pathToFileURL(path.resolve(modules, p)).href;
const GS3D = await import(url('@mkkellogg/gaussian-splats-3d/build/gaussian-splats-3d.module.js'));
const THREE = await import(url('three/build/three.module.js'));

const bytes = fs.readFileSync(input);
const ply = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
const splats = GS3D.PlyParser.parseToUncompressedSplatArray(ply, Number(shDegree));
const generator = GS3D.SplatBufferGenerator.getStandardGenerator(
    0, Number(level), Number(sectionSize), new THREE.Vector3(), Number(blockSize), Number(bucketSize));
const buffer = generator.generateFromUncompressedSplatArray(splats);
fs.writeFileSync(output, Buffer.from(buffer.bufferData));
console.log(`${output}: ${buffer.getSplatCount()} splats of ${splats.splatCount}`);
