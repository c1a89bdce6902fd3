// The browser view is built into one directory that the build embeds in
// the microscope binary (scripts/build-web): no network when serving.
import {defineConfig} from 'vite';

export default defineConfig({
  base: '/',
  build: {
    outDir: process.env.MICROSCOPE_WEB_OUT ?? 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // One script and one style sheet: few requests, nothing lazy to miss.
    cssCodeSplit: false,
    sourcemap: false,
  },
  test: {
    include: ['test/**/*.test.ts'],
  },
});
