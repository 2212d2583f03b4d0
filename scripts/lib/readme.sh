# Reading the README's runnable blocks (sourced by scripts/readme-distributed.sh).
#
# A runnable block is a ```sh fence right after a line `<!-- readme-test: ROLE [MODE] -->`
# inside one "## " section; an HTML comment is invisible on GitHub, so the README reads
# as plain instructions. Indented blocks and untagged fences are for people only.

# readme_blocks README SECTION OUTDIR: writes OUTDIR/NN.sh (the block's text) and
# OUTDIR/NN.tag (ROLE [MODE]) for each runnable block of "## SECTION", in order; prints
# how many it wrote. A tag not followed by a ```sh fence, or a fence left open, is an
# error: a README edit must not silently drop a step from the test.
readme_blocks() {
  local readme=$1 section=$2 out=$3
  mkdir -p "$out"
  awk -v section="## $section" -v out="$out" '
    function fail(msg) { print FILENAME ":" NR ": " msg > "/dev/stderr"; bad = 1; exit 1 }
    $0 == section { inside = 1; next }
    inside && /^## / { inside = 0 }
    !inside { next }
    infence {
      if ($0 == "```") { infence = 0; close(file); next }
      print > file; next
    }
    pending {
      if ($0 != "```sh") fail("readme-test tag not followed by a ```sh block")
      pending = 0; infence = 1; n++
      file = sprintf("%s/%02d.sh", out, n)
      printf "%s\n", tag > sprintf("%s/%02d.tag", out, n)
      close(sprintf("%s/%02d.tag", out, n))
      printf "" > file
      next
    }
    match($0, /^<!-- readme-test: [a-z ]+ -->$/) {
      tag = substr($0, 19, length($0) - 22); pending = 1; next
    }
    END {
      if (bad) exit 1
      if (infence) { print FILENAME ": block " n " never closed" > "/dev/stderr"; exit 1 }
      if (pending) { print FILENAME ": readme-test tag at the end of the section" > "/dev/stderr"; exit 1 }
      print n + 0
    }
  ' "$readme"
}
