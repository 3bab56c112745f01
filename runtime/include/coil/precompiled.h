// Every header a generated translation unit includes, in one file that coil compiles once
// per compiler, flags, ISA and headers' contents (src/runtime/pch.cpp) and hands to each
// kernel build: with -include through the cache entry's folder (GCC finds the .gch
// there) or with -include-pch (clang). A generated file still includes what it uses;
// with the precompiled header those includes cost nothing. A header the generated code
// starts to include belongs here too, or every build parses it again.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "coil/artifact.h"
#include "coil/attention.h"
#include "coil/extern_loops.h"
#include "coil/prelude.h"
#include "coil/profile.h"
