#pragma once
// Output for a terminal: lines within kScreenWidth columns, wide tables in blocks, colour only on
// a terminal (never when piped or with NO_COLOR set; as a rank of mpirun only with FORCE_COLOR),
// and version lists such as "v1–v9, v11".
#include <cstddef>
#include <string>
#include <vector>

#include "text_table.hpp"

namespace knn {

inline constexpr std::size_t kScreenWidth = 100;

// Colour on `fd` (STDOUT_FILENO, ...): never with NO_COLOR set and not empty (no-color.org). A
// process started by an MPI launcher cannot tell where its output ends up (mpi_env.hpp: Open MPI
// gives each rank a pseudo-terminal even when mpirun writes to a file): colour only when FORCE_COLOR
// is set, not empty and not "0" (mpirun -x FORCE_COLOR=1 ...). Otherwise: `fd` is a terminal.
bool colour_wanted(int fd);
// A progress line rewritten in place (carriage returns) on `fd`: a terminal, and not started by an
// MPI launcher (there the ranks' lines pass through mpirun, which may write them to a file).
bool progress_wanted(int fd);

enum class Colour { red, green, yellow };
// `text` in `c` (ANSI escapes) when `on`, else unchanged.
std::string paint(const std::string& text, Colour c, bool on);
// Every whole-word occurrence of `word` in `text` painted (words are separated by spaces or line ends).
std::string paint_word(const std::string& text, const std::string& word, Colour c, bool on);

// Columns a line takes: UTF-8 code points, ANSI escapes not counted.
std::size_t display_width(const std::string& text);

// `text` broken at spaces into lines of at most `width` columns, the lines after the first indented
// by `indent` spaces (the first keeps its own leading blanks); a word longer than a line is cut.
// Each line ends in '\n'.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent);

// Each line of `text` longer than `width` wrapped, its continuations indented two columns more
// than the line itself; shorter lines unchanged.
std::string wrap_lines(const std::string& text, std::size_t width);

// text_table() split into blocks of columns that fit `width`, the first (label) column repeated in
// each block, a blank line between blocks.
std::string text_table_in_blocks(const TableRows& rows, const std::vector<Align>& align, std::size_t width);

// Version ids as runs of consecutive numbers: {v1,...,v9,v11,v13} -> "v1–v9, v11, v13" (ids as
// given, in registry order; an id without a number stands alone).
std::string version_runs(const std::vector<std::string>& ids);
// The same for case ids: {0,1,2,3,8} -> "0–3, 8".
std::string id_runs(const std::vector<int>& ids);

}  // namespace knn
