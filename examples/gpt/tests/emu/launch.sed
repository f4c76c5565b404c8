# launch.sed - rewrites CUDA's kernel launch `k<<<grid, block, shmem, stream>>>(args)` into the
# emulation's `emu_launch(k, grid, block, shmem, stream)(args)` (tests/emu/cuda_runtime.h); one
# launch per line, as the backend writes them. A `<<<` this does not rewrite fails the C++ build.
s/([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*<<<(.*)>>>[[:space:]]*\(/emu_launch(\1, \2)(/g
