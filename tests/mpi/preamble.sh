# Sourced by the script tests that run knnbench under mpirun ($bin set before): skips (77) without
# mpirun or without an MPI build of $bin; makes a scratch folder $work, removed at exit; and sets
# Open MPI's environment for a container (no single-copy mechanism, oversubscribed cores), with no
# GPU visible and one OpenMP thread per rank.
command -v mpirun >/dev/null || { echo "mpirun not found: skipped, not run"; exit 77; }
# The listing is read whole (`grep -q` stops at its match, and under pipefail ldd's SIGPIPE then
# fails the test's condition: a spurious skip).
ldd "$bin" | grep libmpi >/dev/null || { echo "knnbench built without MPI: skipped, not run"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1
