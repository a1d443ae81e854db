// StreamView's own rules: the default view is the default stream, a handle comes back as it went
// in, views compare by handle, and the type is a plain value (trivially copyable, a pointer wide).
#include <gtest/gtest.h>

#include <type_traits>

#include "tessera/core/stream.hpp"

namespace tessera {
namespace {

static_assert(std::is_trivially_copyable_v<StreamView>);
static_assert(sizeof(StreamView) == sizeof(void*));
static_assert(!std::is_convertible_v<void*, StreamView>, "a handle becomes a view only explicitly");
static_assert(!std::is_convertible_v<StreamView, void*>, "a view gives its handle only through native()");
static_assert(StreamView().is_default() && StreamView() == StreamView(nullptr));

TEST(StreamView, DefaultIsTheDefaultStream) {
  const StreamView s;
  EXPECT_TRUE(s.is_default());
  EXPECT_EQ(s.native(), nullptr);
  EXPECT_EQ(s.value(), nullptr);
  EXPECT_TRUE(StreamView(nullptr).is_default());
  EXPECT_TRUE(StreamView{}.is_default());
}

TEST(StreamView, HandleRoundTrips) {
  int stand_in = 0;  // any address: a stand-in device runtime's streams are such pointers
  const StreamView s(&stand_in);
  EXPECT_FALSE(s.is_default());
  EXPECT_EQ(s.native(), &stand_in);
  EXPECT_EQ(s.value(), &stand_in);
  const StreamView copy = s;
  EXPECT_EQ(copy.native(), &stand_in);
}

TEST(StreamView, EqualWhenTheHandlesAre) {
  int a = 0, b = 0;
  EXPECT_EQ(StreamView(&a), StreamView(&a));
  EXPECT_NE(StreamView(&a), StreamView(&b));
  EXPECT_NE(StreamView(&a), StreamView());
  EXPECT_EQ(StreamView(), StreamView(nullptr));
  EXPECT_FALSE(StreamView(&a) != StreamView(&a));
  EXPECT_FALSE(StreamView(&a) == StreamView(&b));
}

}  // namespace
}  // namespace tessera
