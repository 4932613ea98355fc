//===- WritingTest.cpp - Names made file names, files written, CSV rows ---===//
//
// The rules every file lap writes goes through: a name it did not choose
// becomes a file name only when it stays in its directory; no write goes
// through a symbolic link (its target is untouched); CSV fields with
// commas, quotes and line breaks keep their columns.
//
//===----------------------------------------------------------------------===//

#include "runtime/platform/Csv.h"
#include "runtime/platform/FileNames.h"
#include "runtime/platform/Files.h"
#include "test/unit/TempDir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace lap::platform;
namespace fs = std::filesystem;

namespace {

std::string contents(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FileNames, PlainNamesPass) {
  for (const char *name : {"tiny", "tiny_lm-laplacian_heads=2-seed=1", "a b",
                           "x..y", "ünïcode", "1e-3"})
    EXPECT_EQ(fileNameProblem(name), "") << name;
  EXPECT_EQ(fileNameProblem(std::string(kMaxFileNameBytes, 'a')), "");
}

TEST(FileNames, NamesThatLeaveTheirDirectoryAreRefused) {
  EXPECT_EQ(fileNameProblem(""), "is empty");
  EXPECT_EQ(fileNameProblem("../../victim"), "starts with '.'");
  EXPECT_EQ(fileNameProblem(".."), "starts with '.'");
  EXPECT_EQ(fileNameProblem(".hidden"), "starts with '.'");
  EXPECT_EQ(fileNameProblem("a/b"), "contains '/'");
  EXPECT_EQ(fileNameProblem("/etc"), "contains '/'");
  EXPECT_EQ(fileNameProblem(std::string("a\0b", 3)),
            "contains a control character");
  EXPECT_EQ(fileNameProblem("two\nlines"), "contains a control character");
  EXPECT_EQ(fileNameProblem(std::string(kMaxFileNameBytes + 1, 'a')),
            "is 201 bytes long, more than the 200 a file name may have");
  EXPECT_EQ(pathInDirectory("out", "v1", "the variant"), "out/v1");
  try {
    pathInDirectory("out", "../v", "the variant");
    FAIL() << "accepted ../v";
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "the variant '../v' starts with '.': it cannot "
                           "name a file in out");
  }
}

TEST(Files, AtomicWritesReplaceALinkNotItsTarget) {
  lap::test::TempDir dir;
  std::string victim = dir.file("victim"), link = dir.file("out.txt");
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, link);
  writeFileAtomically(link, "new");
  EXPECT_EQ(contents(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(contents(link), "new");
  // Nothing is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), {}), 2);
}

TEST(Files, AtomicWriteFailuresSayWhy) {
  lap::test::TempDir dir;
  std::string why =
      writeFileAtomically(dir.file("missing/out.txt"), "x", std::nothrow);
  EXPECT_EQ(why, "cannot create a temporary file beside it: No such file or "
                 "directory");
  fs::create_directory(dir.file("taken"));
  why = writeFileAtomically(dir.file("taken"), "x", std::nothrow);
  EXPECT_EQ(why, "cannot rename into place: Is a directory");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), {}), 1);
  EXPECT_THROW(writeFileAtomically(dir.file("taken"), "x"), std::runtime_error);
}

TEST(Files, AFifoOrDeviceIsWrittenIntoNotReplaced) {
  lap::test::TempDir dir;
  std::string fifo = dir.file("pipe");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  writeFileAtomically(fifo, "hello");
  char got[8] = {};
  EXPECT_EQ(::read(reader, got, sizeof got), 5);
  ::close(reader);
  EXPECT_STREQ(got, "hello");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), {}), 1);
}

TEST(Files, OpenForWritingRefusesLinks) {
  lap::test::TempDir dir;
  std::string victim = dir.file("victim"), link = dir.file("metrics.jsonl");
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, link);
  try {
    openForWriting(link, O_WRONLY | O_CREAT | O_APPEND);
    FAIL() << "opened a link";
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()),
              link + ": is a symbolic link; lap does not write through links "
                     "(remove it, or choose another path)");
  }
  // A dangling link too: O_CREAT would otherwise create its target.
  fs::remove(victim);
  EXPECT_THROW(openForWriting(link, O_WRONLY | O_CREAT), std::runtime_error);
  EXPECT_FALSE(fs::exists(victim));
  int fd = openForWriting(dir.file("plain"), O_WRONLY | O_CREAT | O_APPEND);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(writeAll(fd, "line\n", 5));
  ::close(fd);
  EXPECT_EQ(contents(dir.file("plain")), "line\n");
  try {
    openForWriting(dir.file("no/such"), O_WRONLY | O_CREAT);
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("no/such") +
                  ": cannot open for writing: No such file or directory");
  }
}

TEST(Csv, FieldsKeepTheirColumns) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField(""), "");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csvField(" padded"), "\" padded\"");
  EXPECT_EQ(csvRow({"x", "1,2", "\""}), "x,\"1,2\",\"\"\"\"\n");
}

} // namespace
