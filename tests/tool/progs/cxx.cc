// SPDX-License-Identifier: MIT
/*
 * cxx - a C++ program for the C++ names of ukprobe: ns::Parser::parse is
 * overloaded (int, const char *), and called 3 and 2 times; prints the sum.
 */
#include <cstdio>
#include <cstring>

#define NOINLINE __attribute__((noinline, noipa))

namespace ns {
struct Parser {
	long base;
	NOINLINE long parse(int v) { return base + v; }
	NOINLINE long parse(const char *s) { return base + (long)std::strlen(s); }
};
}

int main()
{
	ns::Parser p{ 10 };
	long sum = 0;

	for (int i = 0; i < 3; i++)
		sum += p.parse(i);
	sum += p.parse("ab");
	sum += p.parse("abc");
	std::printf("sum=%ld\n", sum);
	return 0;
}
