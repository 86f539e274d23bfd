#include <stdio.h>
int main(void)
{
    fputs("imgpipe: not built yet\n", stderr);
    return 2;
}
