#!/bin/sh
# Installs the built ccshim into a scratch prefix, then builds and runs the
# consumer against it with find_package (shared and static) and pkg-config.
# usage: run.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -eu
build=$1 src=$2 cc=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake/consumer"
"$work/cmake/consumer_static"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" \
  "$cc" "$src/main.c" -o "$work/consumer_pc" $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs ccshim)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer_pc"
echo "consumer: find_package(ccshim) shared and static, and pkg-config, all ran"
