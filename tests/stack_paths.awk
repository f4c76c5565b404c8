# stack_paths.awk - the deepest stack of every public function, from GCC's -fcallgraph-info=su
# (.ci files, VCG). A path's depth is the sum of the frames along its calls; a function's depth
# is its frame plus its deepest callee. Library calls (memset, sqrt, malloc, ...) count 0 (the C
# library's own frames, not ours); an indirect call (the GEMM micro-kernel and packer pointers of
# muon.h's kernel table, qsort's comparator) counts the deepest path of any function whose
# address the code takes: any static function named *_ukr_*, *_pack_* or *_cmp*. Output: "depth<TAB>function<TAB>path" for every function with
# external linkage (its title has no "file:" prefix). A cycle (recursion) prints "cycle".
/^node:/ {
    t = $0; sub(/.*title: "/, "", t); sub(/".*/, "", t)
    l = $0; sub(/.*label: "/, "", l); sub(/".*/, "", l)
    b = 0
    if (match(l, /[0-9]+ bytes/)) b = substr(l, RSTART, RLENGTH) + 0
    frame[t] = b; isnode[t] = 1
    if (t ~ /_ukr_|_pack_|_cmp/) cand[t] = 1
}
/^edge:/ {
    s = $0; sub(/.*sourcename: "/, "", s); sub(/".*/, "", s)
    d = $0; sub(/.*targetname: "/, "", d); sub(/".*/, "", d)
    ne[s]++; dst[s, ne[s]] = d
}
function depth(f,    i, c, best, bp, x, k) {
    if (f in memo) return memo[f]
    if (onstack[f]) { cyc = 1; return 0 }
    onstack[f] = 1
    best = 0; bp = ""
    for (i = 1; i <= ne[f]; i++) {
        c = dst[f, i]
        if (c == "__indirect_call") {
            for (k in cand) { x = depth(k); if (x > best) { best = x; bp = " > (indirect) " via[k] } }
            continue
        }
        x = depth(c)
        if (x > best) { best = x; bp = " > " via[c] }
    }
    onstack[f] = 0
    memo[f] = frame[f] + best
    n = f; sub(/^[^:]*:/, "", n)
    via[f] = n bp
    return memo[f]
}
END {
    for (f in isnode) {
        if (f ~ /:/ || frame[f] == 0 && ne[f] == 0) continue
        if (f !~ /^(rn|muon|muown)_/) continue
        cyc = 0
        d = depth(f)
        printf "%d\t%s\t%s%s\n", d, f, via[f], cyc ? " (cycle)" : ""
    }
}
